// The Kubernetes objects deploy/ uses, as zod schemas (strict: a misspelt or unsupported field fails), and
// what the deployment tests read from them: a keygate container's mode and environment. Shared by
// test/deploy/manifests.test.ts (deploy/base and its overlays) and test/deploy/forward-auth-manifests.test.ts
// (the decision-service overlay).
import { z } from 'zod';

/** RFC 1123 label: names of objects, containers, volumes. */
export const dnsLabel = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'not an RFC 1123 label')
  .max(63);
/** IANA service name: named ports. */
export const portName = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
  .max(15);
export const portNumber = z.number().int().min(1).max(65535);
export const portRef = z.union([portNumber, portName]);
export const stringMap = z.record(z.string(), z.string());
const seconds = z.number().int().min(0);
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/);
const cpu = z.string().regex(/^\d+(\.\d+)?m?$/, 'cpu quantity like 250m or "1"');
const memory = z.string().regex(/^\d+(Ki|Mi|Gi|Ti)$/, 'memory quantity like 256Mi');

export const metadata = z.strictObject({
  name: dnsLabel,
  namespace: dnsLabel.optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
});

const keyRef = z.strictObject({ name: dnsLabel, key: z.string().min(1), optional: z.boolean().optional() });
const envVar = z
  .strictObject({
    name: envName,
    // Kubernetes refuses non-string values: `value: 8080` must be quoted.
    value: z.string().optional(),
    valueFrom: z
      .strictObject({ secretKeyRef: keyRef.optional(), configMapKeyRef: keyRef.optional() })
      .refine((v) => Object.keys(v).length === 1, 'valueFrom needs exactly one source')
      .optional(),
  })
  .refine((v) => (v.value === undefined) !== (v.valueFrom === undefined), 'exactly one of value and valueFrom');
const envFrom = z
  .strictObject({
    configMapRef: z.strictObject({ name: dnsLabel, optional: z.boolean().optional() }).optional(),
    secretRef: z.strictObject({ name: dnsLabel, optional: z.boolean().optional() }).optional(),
    prefix: z.string().optional(),
  })
  .refine(
    (v) => (v.configMapRef === undefined) !== (v.secretRef === undefined),
    'exactly one of configMapRef and secretRef',
  );

const handlers = {
  httpGet: z
    .strictObject({ path: z.string().startsWith('/'), port: portRef, scheme: z.enum(['HTTP', 'HTTPS']).optional() })
    .optional(),
  exec: z.strictObject({ command: z.array(z.string()).min(1) }).optional(),
  tcpSocket: z.strictObject({ port: portRef }).optional(),
};
const oneHandler = (v: Record<string, unknown>) =>
  ['httpGet', 'exec', 'tcpSocket', 'sleep'].filter((k) => v[k] !== undefined).length === 1;
export const probe = z
  .strictObject({
    ...handlers,
    initialDelaySeconds: seconds.optional(),
    periodSeconds: z.number().int().min(1).optional(),
    timeoutSeconds: z.number().int().min(1).optional(),
    failureThreshold: z.number().int().min(1).optional(),
    successThreshold: z.number().int().min(1).optional(),
  })
  .refine(oneHandler, 'a probe needs exactly one handler');
const lifecycleHandler = z
  .strictObject({ ...handlers, sleep: z.strictObject({ seconds: z.number().int().min(1) }).optional() })
  .refine(oneHandler, 'a hook needs exactly one handler');

const containerSecurity = z.strictObject({
  allowPrivilegeEscalation: z.literal(false),
  readOnlyRootFilesystem: z.boolean().optional(),
  privileged: z.literal(false).optional(),
  runAsNonRoot: z.literal(true).optional(),
  runAsUser: z.number().int().min(1).optional(),
  runAsGroup: z.number().int().min(0).optional(),
  capabilities: z.strictObject({
    drop: z.array(z.string()).refine((d) => d.includes('ALL'), 'drop ALL'),
    add: z.array(z.string()).optional(),
  }),
});

export const container = z.strictObject({
  name: dnsLabel,
  image: z.string().min(1),
  imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  ports: z
    .array(
      z.strictObject({
        name: portName.optional(),
        containerPort: portNumber,
        protocol: z.enum(['TCP', 'UDP', 'SCTP']).optional(),
      }),
    )
    .optional(),
  env: z.array(envVar).optional(),
  envFrom: z.array(envFrom).optional(),
  startupProbe: probe.optional(),
  readinessProbe: probe.optional(),
  livenessProbe: probe.optional(),
  lifecycle: z
    .strictObject({ preStop: lifecycleHandler.optional(), postStart: lifecycleHandler.optional() })
    .optional(),
  resources: z.strictObject({
    requests: z.strictObject({ cpu, memory }),
    limits: z.strictObject({ cpu: cpu.optional(), memory }),
  }),
  securityContext: containerSecurity,
  volumeMounts: z
    .array(z.strictObject({ name: dnsLabel, mountPath: z.string().startsWith('/'), readOnly: z.boolean().optional() }))
    .optional(),
});

export const podSpec = z.strictObject({
  containers: z.array(container).min(1),
  terminationGracePeriodSeconds: seconds.optional(),
  automountServiceAccountToken: z.boolean().optional(),
  enableServiceLinks: z.boolean().optional(),
  serviceAccountName: dnsLabel.optional(),
  securityContext: z.strictObject({
    runAsNonRoot: z.literal(true),
    runAsUser: z.number().int().min(1).optional(),
    runAsGroup: z.number().int().min(0).optional(),
    fsGroup: z.number().int().min(0).optional(),
    seccompProfile: z.strictObject({ type: z.enum(['RuntimeDefault', 'Localhost']) }).optional(),
  }),
  topologySpreadConstraints: z
    .array(
      z.strictObject({
        maxSkew: z.number().int().min(1),
        topologyKey: z.string().min(1),
        whenUnsatisfiable: z.enum(['DoNotSchedule', 'ScheduleAnyway']),
        labelSelector: z.strictObject({ matchLabels: stringMap }),
      }),
    )
    .optional(),
  volumes: z
    .array(
      z
        .strictObject({
          name: dnsLabel,
          emptyDir: z
            .strictObject({ medium: z.enum(['', 'Memory']).optional(), sizeLimit: memory.optional() })
            .optional(),
          configMap: z
            .strictObject({
              name: dnsLabel,
              defaultMode: z.number().int().optional(),
              optional: z.boolean().optional(),
            })
            .optional(),
        })
        .refine((v) => (v.emptyDir === undefined) !== (v.configMap === undefined), 'a volume needs exactly one source'),
    )
    .optional(),
});

export const labelSelector = z.strictObject({
  matchLabels: stringMap.refine((m) => Object.keys(m).length > 0, 'empty selector'),
});

export const deployment = z.strictObject({
  apiVersion: z.literal('apps/v1'),
  kind: z.literal('Deployment'),
  metadata,
  spec: z.strictObject({
    // Absent only where a HorizontalPodAutoscaler owns it (overlays/hpa).
    replicas: z.number().int().min(1).optional(),
    revisionHistoryLimit: z.number().int().min(0).optional(),
    selector: labelSelector,
    strategy: z
      .union([
        z.strictObject({ type: z.literal('Recreate') }),
        z.strictObject({
          type: z.literal('RollingUpdate'),
          rollingUpdate: z
            .strictObject({
              maxSurge: z.union([z.number().int(), z.string()]),
              maxUnavailable: z.union([z.number().int(), z.string()]),
            })
            .optional(),
        }),
      ])
      .optional(),
    template: z.strictObject({
      metadata: z.strictObject({ labels: stringMap, annotations: stringMap.optional() }),
      spec: podSpec,
    }),
  }),
});
export const service = z.strictObject({
  apiVersion: z.literal('v1'),
  kind: z.literal('Service'),
  metadata,
  spec: z.strictObject({
    type: z.enum(['ClusterIP', 'NodePort', 'LoadBalancer']).optional(),
    selector: stringMap,
    ports: z
      .array(
        z.strictObject({
          name: portName,
          protocol: z.enum(['TCP', 'UDP']).optional(),
          port: portNumber,
          targetPort: portRef,
        }),
      )
      .min(1),
  }),
});
export const configMap = z.strictObject({
  apiVersion: z.literal('v1'),
  kind: z.literal('ConfigMap'),
  metadata,
  data: stringMap,
});
export const secret = z
  .strictObject({
    apiVersion: z.literal('v1'),
    kind: z.literal('Secret'),
    metadata,
    type: z.literal('Opaque').optional(),
    stringData: stringMap.optional(),
    data: stringMap.optional(),
  })
  .refine((s) => s.stringData || s.data, 'a Secret without data');
export const pdb = z.strictObject({
  apiVersion: z.literal('policy/v1'),
  kind: z.literal('PodDisruptionBudget'),
  metadata,
  spec: z
    .strictObject({
      minAvailable: z.union([z.number().int(), z.string()]).optional(),
      maxUnavailable: z.union([z.number().int(), z.string()]).optional(),
      selector: labelSelector,
    })
    .refine(
      (s) => (s.minAvailable === undefined) !== (s.maxUnavailable === undefined),
      'exactly one of minAvailable and maxUnavailable',
    ),
});

export const hpa = z.strictObject({
  apiVersion: z.literal('autoscaling/v2'),
  kind: z.literal('HorizontalPodAutoscaler'),
  metadata,
  spec: z
    .strictObject({
      scaleTargetRef: z.strictObject({
        apiVersion: z.literal('apps/v1'),
        kind: z.literal('Deployment'),
        name: dnsLabel,
      }),
      minReplicas: z.number().int().min(1),
      maxReplicas: z.number().int().min(1),
      metrics: z
        .array(
          z.strictObject({
            type: z.literal('Resource'),
            resource: z.strictObject({
              name: z.enum(['cpu', 'memory']),
              target: z.strictObject({
                type: z.literal('Utilization'),
                averageUtilization: z.number().int().min(1).max(100),
              }),
            }),
          }),
        )
        .min(1),
      behavior: z
        .strictObject({
          scaleDown: z
            .strictObject({
              stabilizationWindowSeconds: z.number().int().min(0).max(3600).optional(),
              policies: z
                .array(
                  z.strictObject({
                    type: z.enum(['Pods', 'Percent']),
                    value: z.number().int().min(1),
                    periodSeconds: z.number().int().min(1).max(1800),
                  }),
                )
                .optional(),
            })
            .optional(),
        })
        .optional(),
    })
    .refine((s) => s.maxReplicas >= s.minReplicas, 'maxReplicas below minReplicas'),
});

/** The apiVersion/kind pairs deploy/ may use; anything else (a typo, a removed beta API) fails. */
export const KINDS = {
  'apps/v1 Deployment': deployment,
  'v1 Service': service,
  'v1 ConfigMap': configMap,
  'v1 Secret': secret,
  'policy/v1 PodDisruptionBudget': pdb,
  'autoscaling/v2 HorizontalPodAutoscaler': hpa,
} as const;

export type Deployment = z.infer<typeof deployment>;
export type Container = z.infer<typeof container>;
export type Probe = z.infer<typeof probe>;

export function issues(schema: z.ZodType, value: unknown): string[] {
  const r = schema.safeParse(value);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
}

/** The keygate mode a container runs: `node dist/cli.js <mode>` (the image's CMD defaults to gateway). */
export function modeOf(c: Container): string | undefined {
  const argv = [...(c.command ?? []), ...(c.args ?? [])];
  const i = argv.findIndex((a) => /(^|\/)dist\/cli\.js$/.test(a));
  if (i >= 0) return argv[i + 1] ?? 'start';
  if (!c.command && !c.args && /(^|\/)keygate[:@]/.test(c.image)) return 'gateway';
  return undefined;
}

/** The environment a container gets from `configMaps` (envFrom) and literal values, secrets as refs. */
export function environmentOf(
  c: Container,
  configMaps: readonly z.infer<typeof configMap>[],
): {
  literal: Record<string, string>;
  fromSecret: Record<string, { name: string; key: string }>;
} {
  const literal: Record<string, string> = {};
  const fromSecret: Record<string, { name: string; key: string }> = {};
  for (const ef of c.envFrom ?? []) {
    if (ef.configMapRef) {
      const cm = configMaps.find((m) => m.metadata.name === ef.configMapRef!.name);
      for (const [k, v] of Object.entries(cm?.data ?? {})) literal[(ef.prefix ?? '') + k] = v;
    }
  }
  for (const e of c.env ?? []) {
    delete literal[e.name];
    if (e.value !== undefined) literal[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) fromSecret[e.name] = e.valueFrom.secretKeyRef;
    else if (e.valueFrom?.configMapKeyRef) {
      const ref = e.valueFrom.configMapKeyRef;
      const v = configMaps.find((m) => m.metadata.name === ref.name)?.data[ref.key];
      if (v !== undefined) literal[e.name] = v;
    }
  }
  return { literal, fromSecret };
}

/** Valid stand-ins for secret values, so a container's whole environment can go through loadSettings. */
export const STAND_INS: Record<string, string> = {
  GATEWAY_SECRET: 'a'.repeat(64),
  INTERNAL_TOKEN: 'b'.repeat(48),
  CREDENTIAL_KEYS: `k1:${Buffer.from('c'.repeat(31) + 'd').toString('base64')}`,
  DATABASE_URL: 'postgres://keygate:pw@postgres:5432/keygate',
  REDIS_URL: 'redis://redis:6379/0',
};
