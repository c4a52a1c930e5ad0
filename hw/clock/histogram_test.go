package clock

import (
	"math"
	"testing"
	"time"
)

func TestBucketsCoverEveryDuration(t *testing.T) {
	prev := -1
	for d := time.Duration(0); d < 40*time.Second; d = d*1001/1000 + 1 {
		i := bucketOf(d)
		if i < prev {
			t.Fatalf("bucket of %v is %d, below %d of a shorter duration", d, i, prev)
		}
		prev = i
		mid := bucketMid(i)
		if i < numBuckets-1 && math.Abs(float64(mid-d)) > 0.008*float64(d)+0.5 {
			t.Fatalf("%v lands in bucket %d whose middle %v is more than 0.8%% away", d, i, mid)
		}
	}
	for i := range numBuckets {
		if got := bucketOf(bucketMid(i)); got != i {
			t.Fatalf("middle of bucket %d (%v) lands in bucket %d", i, bucketMid(i), got)
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	for _, tc := range []struct {
		name     string
		values   []time.Duration
		q        float64
		want     time.Duration
		tolerant float64 // relative
	}{
		{"empty", nil, 0.5, 0, 0},
		{"single", []time.Duration{3 * time.Microsecond}, 0.99, 3 * time.Microsecond, 0.008},
		{"sub-microsecond exact", []time.Duration{200, 200, 200, 900}, 0.5, 200, 0},
		{"median of 1..100 us", seq(100, time.Microsecond), 0.5, 50 * time.Microsecond, 0.008},
		{"p99 of 1..100 us", seq(100, time.Microsecond), 0.99, 99 * time.Microsecond, 0.008},
		{"p100 is the max", seq(100, time.Microsecond), 1, 100 * time.Microsecond, 0},
		{"negative counts as zero", []time.Duration{-5, -5, 7}, 0.5, 0, 0},
		{"beyond the last bucket", []time.Duration{time.Minute}, 0.5, time.Minute, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Histogram
			for _, v := range tc.values {
				h.Add(v)
			}
			got := h.Quantile(tc.q)
			if math.Abs(float64(got-tc.want)) > tc.tolerant*float64(tc.want) {
				t.Fatalf("quantile %v = %v, want %v", tc.q, got, tc.want)
			}
			if h.Count() != uint64(len(tc.values)) {
				t.Fatalf("count %d", h.Count())
			}
			h.Reset()
			if h.Count() != 0 || h.Quantile(0.5) != 0 || h.Max() != 0 {
				t.Fatal("Reset left data")
			}
		})
	}
}

func seq(n int, unit time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * unit
	}
	return out
}

func TestHistogramDoesNotAllocate(t *testing.T) {
	var h Histogram
	d := time.Duration(1)
	if allocs := testing.AllocsPerRun(1000, func() {
		d = d*3 + 7
		h.Add(d % time.Second)
		_ = h.Quantile(0.99)
	}); allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}
