// The gate's scripts on Redis (./gate.ts sends them): the batched gate of a standalone Redis, and a
// monthly quota's spend on its own.

// Every gate call made while the event loop polls is sent together when it is done, or as soon as 16
// are waiting (one write, one reply, one script run for many requests under load). Each request is
// still decided on its own, in arrival order, so two requests for one counter see each other's spend
// exactly as if sent apart.
// The batch is decided at one instant (the clock when it is sent): ARGV[1] = now (ms), ARGV[2] = the
// counters' TTL (ms), ARGV[3] = the requests, as fields each ended by a newline, ARGV[4] = the TTL (ms)
// of a monthly quota's counter, ARGV[5] = the key of the latest cooldown's end; per request: the expected version, its operation as a number (a spend
// of n counters is n, a read of n counters -n, a spend with a monthly quota n + 100), the IP's cooldown
// key, the organization's access-version key, its counter keys. Nothing is spent unless the cooldown is
// clear and the version matches.
// A spend with a monthly quota (103) has the month's counter last, then the limits of the others and
// the quota, then the month's floor (../month-checkpoint.ts: the highest count this instance knows; a
// counter Redis lost, or answers below it, is raised to it before the spend, in the same step): the
// month is spent only when every per-minute counter is within its limit, and a spend
// past the quota is undone in the same step (the request is refused; the counter keeps exactly the
// requests admitted, whatever the concurrency across instances). The reply is one string, a line per
// request: 'c <cooldown end>' | 'v <version>' | 's <count> <count>...'; a month's count above its
// quota is a refusal.
// The keys travel in ARGV rather than KEYS, packed with the rest into one argument: a command of 66
// arguments for a batch of 11 cost the gateway twice the CPU of one of 3 (ioredis encodes and counts
// every argument; bench/RESULTS.md), and nested array replies cost a decoder call per element. This
// script runs on a standalone Redis only (every key of the batch on one server); a Cluster, whose keys
// span slots, gets one declared-key script per request (clusterGate in ./index.ts). The key prefix may
// hold no whitespace (checked in ./index.ts), so a newline never occurs inside a field.
// bench/diagnostics/gate-redis-cpu.mjs reads this script from this file.
export const GATE_LUA = `
local now, ttl = tonumber(ARGV[1]), ARGV[2]
-- No address's cooldown can be running while the latest end of any lies in the past (the failure
-- script raises it with every cooldown it sets): the batch then reads no cooldown key at all.
local cooling = tonumber(redis.call('GET', ARGV[5]) or '0') > now
-- Split on newlines with a plain find (memchr), not a pattern: gmatch's '[^\\n]+' matched char by
-- char and was most of the parse (bench/RESULTS.md).
local f, nf = {}, 0
do
  local s, find, sub, at = ARGV[3], string.find, string.sub, 1
  while true do
    local nl = find(s, '\\n', at, true)
    if nl == nil then break end
    nf = nf + 1
    f[nf] = sub(s, at, nl - 1)
    at = nl + 1
  end
end
-- The batch reads each key once: the cooldowns and versions it reads are not written by this script,
-- and a counter is INCRed on its first use and counted here after it (its count, and what is owed
-- to Redis), then written once with INCRBY at the end. Atomic all the same: nothing else runs
-- between the script's commands.
local got, count, owed = {}, {}, {}
local function read(key)
  local v = got[key]
  if v == nil then
    v = redis.call('GET', key) or false
    got[key] = v
  end
  return v
end
local function incr(key, pttl)
  local n = count[key]
  if n == nil then
    n = redis.call('INCR', key)
    if n == 1 then redis.call('PEXPIRE', key, pttl) end
  else
    n = n + 1
    owed[key] = (owed[key] or 0) + 1
  end
  count[key] = n
  return n
end
-- The first spend of a month's counter in the batch raises it to its floor when Redis answers below
-- it (a restart without persistence, a failover to a replica that lacked it): one SET, only then.
local function incrFrom(key, pttl, floor)
  if count[key] ~= nil then return incr(key, pttl) end
  local n = redis.call('INCR', key)
  if n <= floor then
    n = floor + 1
    redis.call('SET', key, n, 'PX', pttl)
  elseif n == 1 then
    redis.call('PEXPIRE', key, pttl)
  end
  count[key] = n
  return n
end
local function decr(key)
  count[key] = count[key] - 1
  owed[key] = (owed[key] or 0) - 1
end
local function peek(key)
  return count[key] or tonumber(read(key) or '0')
end
-- The reply is built as pieces joined once at the end, not by concatenating a string per count.
local out, o = {}, 0
local function put(a, b)
  out[o + 1] = a
  out[o + 2] = b
  o = o + 2
end
local k = 1
while k <= nf do
  local ver, code = tonumber(f[k]), tonumber(f[k + 1])
  local month = code > 100
  if month then code = code - 100 end
  local spend = code > 0
  local nc = spend and code or -code
  if o > 0 then
    o = o + 1
    out[o] = '\\n'
  end
  local cd = cooling and read(f[k + 2])
  if cd and tonumber(cd) > now then
    put('c ', cd)
  else
    local v = read(f[k + 3]) or '0'
    if tonumber(v) ~= ver then
      put('v ', v)
    else
      o = o + 1
      out[o] = 's'
      if month then
        local within = true
        for i = k + 4, k + 2 + nc do
          local n = incr(f[i], ttl)
          if n > tonumber(f[i + nc]) then within = false end
          put(' ', n)
        end
        local mk, floor = f[k + 3 + nc], tonumber(f[k + 4 + 2 * nc])
        if within then
          local n = incrFrom(mk, ARGV[4], floor)
          if n > tonumber(f[k + 3 + 2 * nc]) then decr(mk) end
          put(' ', n)
        else
          put(' ', math.max(peek(mk), floor))
        end
      elseif spend then
        for i = k + 4, k + 3 + nc do put(' ', incr(f[i], ttl)) end
      else
        for i = k + 4, k + 3 + nc do put(' ', peek(f[i])) end
      end
    end
  end
  k = k + 4 + nc
  if month then k = k + nc + 1 end
end
for key, n in pairs(owed) do
  if n ~= 0 then redis.call('INCRBY', key, n) end
end
return table.concat(out)
`;

/**
 * A monthly counter's spend on its own (the uncached path and a Cluster, whose keys span slots): sent
 * only once the per-minute counters admitted the request. KEYS[1]: the month's counter; ARGV: the
 * quota, the TTL (ms), the month's floor (raised to it first, as in GATE_LUA). Past the quota the
 * spend is undone in the same step, as in GATE_LUA.
 */
export const MONTH_LUA = `
local n = redis.call('INCR', KEYS[1])
local floor = tonumber(ARGV[3])
if n <= floor then
  n = floor + 1
  redis.call('SET', KEYS[1], n, 'PX', ARGV[2])
elseif n == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if n > tonumber(ARGV[1]) then redis.call('DECR', KEYS[1]) end
return n
`;
