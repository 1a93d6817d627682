//! The catalog's Lua scripts: each reads and writes one toolset's keys in
//! one atomic step, by Redis's clock.

/// Reads the state hash and Redis's clock in one step.
pub(super) const STATE_SCRIPT: &str = r"
local s = redis.call('HMGET', KEYS[1], 'token', 'last_pong_ms', 'stale_ms', 'max_queue', 'unanswered_since')
if not s[1] then return false end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local unanswered = 0
if s[5] then unanswered = now - tonumber(s[5]) end
return {s[1], now - tonumber(s[2]), tonumber(s[3]), tonumber(s[4]), unanswered}
";

/// Records a pong when its ping id starts with the current token and the
/// pong comes from the registration's owner (ARGV[2]; empty: anyone): the
/// pings are answered, and the registration lives another TTL (ARGV[3] ms).
pub(super) const PONG_SCRIPT: &str = r"
local s = redis.call('HMGET', KEYS[1], 'token', 'owner')
local token = s[1]
if not token then return 'unknown' end
if ARGV[2] ~= '' and s[2] and s[2] ~= '' and s[2] ~= ARGV[2] then return 'not_owner' end
if string.sub(ARGV[1], 1, string.len(token) + 1) ~= token .. '/' then return 'stale' end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'last_pong_ms', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
redis.call('HDEL', KEYS[1], 'unanswered_since')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 'recorded'
";

/// Saves a registration: record, membership, and a fresh hot-path state
/// (registration counts as a pong) with its owner, both living a TTL
/// (ARGV[7] ms) that pongs renew, unless another owner (ARGV[6]; empty: no
/// check) registered the toolset.
pub(super) const SAVE_SCRIPT: &str = r"
local owner = redis.call('HGET', KEYS[3], 'owner')
if ARGV[6] ~= '' and owner and owner ~= '' and owner ~= ARGV[6] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[7])
redis.call('SADD', KEYS[2], ARGV[5])
local t = redis.call('TIME')
redis.call('HSET', KEYS[3], 'token', ARGV[2], 'stale_ms', ARGV[3], 'max_queue', ARGV[4],
  'last_pong_ms', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), 'owner', ARGV[6])
redis.call('HDEL', KEYS[3], 'unanswered_since', 'last_ping_id')
redis.call('PEXPIRE', KEYS[3], ARGV[7])
return 1
";

/// Removes a registration unless another owner (ARGV[2]; empty: no check)
/// made it: -1 refused, else how many records were removed.
pub(super) const DELETE_SCRIPT: &str = r"
local owner = redis.call('HGET', KEYS[3], 'owner')
if ARGV[2] ~= '' and owner and owner ~= '' and owner ~= ARGV[2] then return -1 end
local removed = redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
return removed
";

/// Drops a name from the set of toolsets once its record and state have
/// expired (a provider that left without unregistering).
pub(super) const PRUNE_SCRIPT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('EXISTS', KEYS[3]) == 0 then
  return redis.call('SREM', KEYS[2], ARGV[1])
end
return 0
";
