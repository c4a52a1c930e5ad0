package clock

import (
	"math"
	"math/bits"
	"time"
)

// Histogram buckets (all durations in ns): exact below 256 ns, then 128 buckets per power of two
// (under 0.8% relative width) up to about 34 s; longer durations share the last bucket.
const (
	linearBuckets = 256
	subBuckets    = 128
	subBits       = 7 // log2(subBuckets)
	octaves       = 27
	numBuckets    = linearBuckets + octaves*subBuckets
)

// Histogram counts durations for percentile reports without allocating. The zero value is ready.
// It is not safe for concurrent use.
type Histogram struct {
	counts [numBuckets]uint64
	n      uint64
	max    time.Duration
}

func bucketOf(d time.Duration) int {
	if d < linearBuckets {
		return max(int(d), 0)
	}
	v := uint64(d)
	e := bits.Len64(v) - (subBits + 1) // shift that leaves 8 significant bits: 128..255
	i := linearBuckets + (e-1)*subBuckets + int(v>>e) - subBuckets
	return min(i, numBuckets-1)
}

// bucketMid is the middle of bucket i's range.
func bucketMid(i int) time.Duration {
	if i < linearBuckets {
		return time.Duration(i)
	}
	e := (i-linearBuckets)/subBuckets + 1
	m := uint64((i-linearBuckets)%subBuckets + subBuckets)
	return time.Duration(m<<e + (uint64(1)<<e)/2)
}

// Add counts one duration; negative durations count as zero.
func (h *Histogram) Add(d time.Duration) {
	h.counts[bucketOf(d)]++
	h.n++
	h.max = max(h.max, d)
}

// Count is how many durations were added.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the longest duration added.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the q-quantile (0 < q <= 1) to within a bucket's width, or 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 || math.IsNaN(q) {
		return 0
	}
	rank := uint64(math.Ceil(min(max(q, 0), 1) * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketMid(i), h.max)
		}
	}
	return h.max
}

// Reset forgets every duration.
func (h *Histogram) Reset() { *h = Histogram{} }
