package shell

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Rate is a rate limit (a token bucket): PerSecond events a second on
// average, in bursts of up to Burst. The zero Rate is no limit.
type Rate struct {
	PerSecond float64
	Burst     int
}

// errRate says what ParseRate accepts.
var errRate = errors.New("want N/s, N/m or N/h with N a whole number of at least 1 (N per second, minute or hour, in bursts of up to N), such as 100/s; or 0 for no limit")

// ParseRate reads the value of a rate flag (--rate-key, --rate-ip), the
// same syntax in both commands: N/s, N/m or N/h is N per second, minute or
// hour in bursts of up to N; 0 (or "") is no limit. A bare number R, the
// form wharf took before, still means R per second, in bursts of up to
// 2R+1, so scripts written for it keep working.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return Rate{}, nil
	}
	n, unit, ok := strings.Cut(s, "/")
	if !ok {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || r < 0 || math.IsInf(r, 0) || math.IsNaN(r) || r > 1e9 {
			return Rate{}, errRate
		}
		if r == 0 {
			return Rate{}, nil
		}
		return Rate{PerSecond: r, Burst: int(2*r) + 1}, nil
	}
	per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	count, err := strconv.Atoi(n)
	if per == 0 || err != nil || count < 1 || count > 1e9 {
		return Rate{}, errRate
	}
	return Rate{PerSecond: float64(count) / per.Seconds(), Burst: count}, nil
}
