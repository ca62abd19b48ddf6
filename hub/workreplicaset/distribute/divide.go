package distribute

import (
	"fmt"
	"math"
	"math/bits"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Weight is one cluster's weight in a division.
type Weight struct {
	Cluster string
	Weight  int64
}

// Divide apportions total over the clusters in proportion to their weights
// (the largest remainder method): each cluster gets the floor of its exact
// share, and the replicas left over go one each to the clusters with the
// largest remainders (ties: the larger weight, then the cluster name). The
// shares add up to total. A cluster of weight 0 gets nothing; when no cluster
// has a positive weight, it is an error.
func Divide(total int64, weights []Weight) (map[string]int64, error) {
	out := make(map[string]int64, len(weights))
	var sum int64
	for _, w := range weights {
		if w.Weight < 0 {
			return nil, fmt.Errorf("cluster %s has a negative weight %d", w.Cluster, w.Weight)
		}
		sum += w.Weight
		out[w.Cluster] = 0
	}
	if total <= 0 {
		return out, nil
	}
	if sum == 0 {
		return nil, fmt.Errorf("no cluster has a positive weight among %d: %d replicas cannot be divided", len(weights), total)
	}
	type rem struct {
		Weight
		r int64 // remainder numerator (share = total*weight/sum)
	}
	rems := make([]rem, 0, len(weights))
	var given int64
	for _, w := range weights {
		q, r := mulDiv(total, w.Weight, sum)
		out[w.Cluster] = q
		given += q
		rems = append(rems, rem{w, r})
	}
	sort.Slice(rems, func(i, j int) bool {
		a, b := rems[i], rems[j]
		if a.r != b.r {
			return a.r > b.r
		}
		if a.Weight.Weight != b.Weight.Weight {
			return a.Weight.Weight > b.Weight.Weight
		}
		return a.Cluster < b.Cluster
	})
	for i := 0; given < total; i++ {
		out[rems[i].Cluster]++
		given++
	}
	return out, nil
}

// mulDiv is the exact quotient and remainder of a*b/c for 0 <= a, 0 <= b <= c
// (a weight is at most the sum of the weights): the product is taken in 128
// bits, so the shares always add up to total whatever its size (a float here
// once lost replicas and Divide then ran off its remainders).
func mulDiv(a, b, c int64) (q, r int64) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	uq, ur := bits.Div64(hi, lo, uint64(c)) // hi < c since a*b/c <= a < 2^63
	return int64(uq), int64(ur)
}

// Rebalance moves from the previous assignment towards target (both over
// clusters, target adding up to total) moving as few replicas as it can.
// When the clusters are those of previous and previous adds up to total,
// previous stays (a change of capacity alone reshuffles nothing). Otherwise a
// cluster previous does not know gets its target share, the others start from
// their previous share, and the difference to total is made up one replica
// at a time, taken from the cluster furthest above its target or given to the
// one furthest below (ties by name).
func Rebalance(total int64, clusters []string, target, previous map[string]int64) map[string]int64 {
	same := len(previous) == len(clusters)
	var prevSum int64
	for _, c := range clusters {
		p, ok := previous[c]
		same = same && ok
		prevSum += p
	}
	out := make(map[string]int64, len(clusters))
	if same && prevSum == total {
		for _, c := range clusters {
			out[c] = previous[c]
		}
		return out
	}
	var sum int64
	for _, c := range clusters {
		// A previous share outside [0, total] (a work edited by hand, or a
		// total that shrank) is not a starting point.
		if p, ok := previous[c]; ok && p >= 0 && p <= total {
			out[c] = p
		} else {
			out[c] = target[c]
		}
		sum += out[c]
	}
	sorted := append([]string(nil), clusters...)
	sort.Strings(sorted)
	sum = levelGaps(total, sum, sorted, target, out)
	for sum != total {
		best, bestGap := "", int64(math.MinInt64)
		for _, c := range sorted {
			gap := target[c] - out[c] // > 0: below target
			if sum > total {
				if out[c] == 0 {
					continue
				}
				gap = -gap
			}
			if gap > bestGap {
				best, bestGap = c, gap
			}
		}
		if best == "" {
			break // cannot happen: sum > total means some cluster has replicas
		}
		if sum < total {
			out[best]++
			sum++
		} else {
			out[best]--
			sum--
		}
	}
	return out
}

// levelGaps does in one pass what Rebalance's one-replica-at-a-time loop does
// while a gap is above the level it ends at: when sum < total every cluster's
// gap (target - share) above level L is brought down to L, when sum > total
// every excess (share - target) above L, with L the lowest level that moves no
// more replicas than the difference. The loop always takes from the largest
// gap, so it reaches the same shares; it then has fewer steps left than there
// are clusters (a total of millions of replicas once took that many steps).
// It returns the new sum.
func levelGaps(total, sum int64, clusters []string, target, out map[string]int64) int64 {
	if sum == total || len(clusters) == 0 {
		return sum
	}
	give := sum < total
	gap := func(c string) int64 {
		if give {
			return target[c] - out[c]
		}
		return out[c] - target[c]
	}
	diff := total - sum
	if !give {
		diff = sum - total
	}
	moved := func(level int64) int64 { // replicas moved bringing every gap down to level
		var n int64
		for _, c := range clusters {
			if g := gap(c); g > level {
				n += g - level
				if n > diff {
					return n
				}
			}
		}
		return n
	}
	var hi int64
	for _, c := range clusters {
		if g := gap(c); g > hi {
			hi = g
		}
	}
	lo := int64(0) // moved(hi) == 0 <= diff; find the lowest level in [0, hi] with moved <= diff
	for lo < hi {
		mid := lo + (hi-lo)/2
		if moved(mid) <= diff {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	for _, c := range clusters {
		if g := gap(c); g > lo {
			if give {
				out[c] += g - lo
				sum += g - lo
			} else {
				out[c] -= g - lo
				sum -= g - lo
			}
		}
	}
	return sum
}

// Fit is how many replicas of a pod asking for requests fit in allocatable:
// the smallest, over the requested resources, of allocatable / request
// (rounded down; a resource the cluster does not list fits none). A pod that
// requests nothing fits any number: ok is false, and Capacity weighs such
// clusters equally.
func Fit(requests, allocatable corev1.ResourceList) (n int64, ok bool) {
	n = math.MaxInt64
	for name, req := range requests {
		if req.Sign() <= 0 {
			continue
		}
		ok = true
		alloc, has := allocatable[name]
		if !has || alloc.Sign() <= 0 {
			return 0, true
		}
		var fit int64
		if req.MilliValue() > 0 && alloc.MilliValue() < math.MaxInt64/2 && req.MilliValue() < math.MaxInt64/2 {
			fit = alloc.MilliValue() / req.MilliValue()
		} else {
			fit = int64(alloc.AsApproximateFloat64() / req.AsApproximateFloat64())
		}
		if fit < n {
			n = fit
		}
	}
	if !ok {
		return 0, false
	}
	return n, true
}
