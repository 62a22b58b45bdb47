package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// slidingWindow runs atomically in Redis: drop what aged out of the window, count, add this
// request when it fits, and report the oldest entry still in the window.
// KEYS[1] the project's sorted set; ARGV: now (ms), window (ms), limit, unique member.
var slidingWindow = redis.NewScript(`
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
local allowed = 0
if count < limit then
  redis.call('ZADD', key, now, ARGV[4])
  count = count + 1
  allowed = 1
end
local oldest = now
local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
if first[2] then oldest = tonumber(first[2]) end
redis.call('PEXPIRE', key, window)
return {allowed, count, oldest}
`)

// Redis shares each project's window between replicas through one sorted set per project.
type Redis struct {
	client *redis.Client
	prefix string
	id     string // tells this replica's members apart from others' that share a millisecond
	seq    atomic.Uint64
}

// NewRedis returns a limiter on client; keys start with "switchboard:ratelimit:".
func NewRedis(client *redis.Client) *Redis {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Redis{client: client, prefix: "switchboard:ratelimit:", id: hex.EncodeToString(b)}
}

// Allow implements Limiter. An unreachable Redis is an error: the caller refuses the request.
func (r *Redis) Allow(ctx context.Context, project string, limit int, now time.Time) (Decision, error) {
	ms := now.UnixMilli()
	member := fmt.Sprintf("%d:%s:%d", ms, r.id, r.seq.Add(1))
	res, err := slidingWindow.Run(ctx, r.client, []string{r.prefix + project},
		ms, Window.Milliseconds(), limit, member).Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit in redis: %w", err)
	}
	count := int(res[1])
	return Decision{
		Allowed:   res[0] == 1,
		Limit:     limit,
		Remaining: max(limit-count, 0),
		Reset:     time.UnixMilli(res[2]).Add(Window),
	}, nil
}
