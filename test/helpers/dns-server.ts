// A tiny authoritative DNS server over UDP for tests: TXT, MX, A and AAAA answers from a map, NXDOMAIN
// for unknown names. Point the backend at it with DNS_RESOLVER=127.0.0.1:<port>, the gateway's
// host-name targets with UPSTREAM_DNS_SERVER=127.0.0.1:<port>.
import dgram from 'node:dgram';
import net, { type AddressInfo } from 'node:net';

export interface DnsRecords {
  txt?: string[];
  mx?: { exchange: string; priority: number }[];
  /** IPv4 addresses (A records). */
  a?: string[];
  /** IPv6 addresses (AAAA records). */
  aaaa?: string[];
}

export interface DnsServer {
  /** `127.0.0.1:port`, for DNS_RESOLVER. */
  address: string;
  set(name: string, rec: DnsRecords): void;
  delete(name: string): void;
  /** How many queries were answered (to prove a lookup was live). */
  queries: number;
  close(): Promise<void>;
}

function encodeName(name: string): Buffer {
  const parts = name.replace(/\.$/, '').split('.').filter(Boolean);
  return Buffer.concat([
    ...parts.map((p) => Buffer.concat([Buffer.from([p.length]), Buffer.from(p)])),
    Buffer.from([0]),
  ]);
}

function ipv4Bytes(address: string): Buffer {
  if (!net.isIPv4(address)) throw new Error(`not an IPv4 address: ${address}`);
  return Buffer.from(address.split('.').map(Number));
}

function ipv6Bytes(address: string): Buffer {
  if (!net.isIPv6(address)) throw new Error(`not an IPv6 address: ${address}`);
  const [head, tail] = address.includes('::') ? address.split('::') : [address, null];
  const groups = (part: string) => {
    if (!part) return [];
    const words = part.split(':');
    const last = words[words.length - 1];
    // A trailing dotted IPv4 (::ffff:1.2.3.4) is two 16-bit words.
    if (last.includes('.')) {
      const b = ipv4Bytes(last);
      words.splice(-1, 1, ((b[0] << 8) | b[1]).toString(16), ((b[2] << 8) | b[3]).toString(16));
    }
    return words.map((w) => parseInt(w, 16));
  };
  const left = groups(head);
  const right = tail === null ? [] : groups(tail);
  const words = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const out = Buffer.alloc(16);
  words.forEach((w, i) => out.writeUInt16BE(w, i * 2));
  return out;
}

function readName(buf: Buffer, off: number): { name: string; end: number } {
  const labels: string[] = [];
  while (buf[off] !== 0) {
    const len = buf[off];
    labels.push(buf.subarray(off + 1, off + 1 + len).toString());
    off += len + 1;
  }
  return { name: labels.join('.').toLowerCase(), end: off + 1 };
}

export async function startDnsServer(initial: Record<string, DnsRecords> = {}): Promise<DnsServer> {
  const zone = new Map(Object.entries(initial).map(([k, v]) => [k.toLowerCase(), v]));
  const sock = dgram.createSocket('udp4');
  const srv: DnsServer = {
    address: '',
    queries: 0,
    set: (n, r) => void zone.set(n.toLowerCase(), r),
    delete: (n) => void zone.delete(n.toLowerCase()),
    close: () => new Promise((r) => sock.close(() => r())),
  };
  sock.on('message', (msg, rinfo) => {
    srv.queries++;
    const id = msg.readUInt16BE(0);
    const { name, end } = readName(msg, 12);
    const qtype = msg.readUInt16BE(end);
    const question = msg.subarray(12, end + 4);
    const rec = zone.get(name);
    const answers: Buffer[] = [];
    if (rec && qtype === 16) {
      for (const t of rec.txt ?? []) {
        const chunks: Buffer[] = [];
        for (let i = 0; i < t.length || i === 0; i += 255) {
          const c = Buffer.from(t.slice(i, i + 255));
          chunks.push(Buffer.from([c.length]), c);
          if (t.length === 0) break;
        }
        answers.push(rr(16, Buffer.concat(chunks)));
      }
    }
    if (rec && qtype === 15) {
      for (const m of rec.mx ?? []) {
        const pref = Buffer.alloc(2);
        pref.writeUInt16BE(m.priority);
        answers.push(rr(15, Buffer.concat([pref, encodeName(m.exchange)])));
      }
    }
    if (rec && qtype === 1) for (const a of rec.a ?? []) answers.push(rr(1, ipv4Bytes(a)));
    if (rec && qtype === 28) for (const a of rec.aaaa ?? []) answers.push(rr(28, ipv6Bytes(a)));
    const header = Buffer.alloc(12);
    header.writeUInt16BE(id, 0);
    // QR, AA, RD copied, RA; rcode 3 (NXDOMAIN) for unknown names.
    header.writeUInt16BE(0x8400 | (msg.readUInt16BE(2) & 0x0100) | 0x0080 | (rec ? 0 : 3), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    sock.send(Buffer.concat([header, question, ...answers]), rinfo.port, rinfo.address);
  });
  function rr(type: number, rdata: Buffer): Buffer {
    const b = Buffer.alloc(12);
    b.writeUInt16BE(0xc00c, 0); // pointer to the question's name
    b.writeUInt16BE(type, 2);
    b.writeUInt16BE(1, 4);
    b.writeUInt32BE(60, 6);
    b.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([b, rdata]);
  }
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  srv.address = `127.0.0.1:${(sock.address() as AddressInfo).port}`;
  return srv;
}
