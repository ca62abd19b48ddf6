package watchguard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name       string
		e          ending
		early, est bool
		want       verdict
	}{
		{"ran out its time: open it again", closed, false, true, again},
		{"ran out its time on the first watch", closed, false, false, again},
		{"closed early while the agent depended on it: cut", closed, true, true, cutOff},
		{"closed early before any watch was open: a slow start", closed, true, false, relist},
		{"could not open, after a watch had been open: cut", openFailed, false, true, cutOff},
		{"could not open at the start: try again", openFailed, false, false, relist},
		{"an ERROR event on a live watch: cut", errorEvent, false, true, cutOff},
		{"410 Gone: list again, nothing missed", expired, false, true, relist},
		{"410 Gone at the start", expired, false, false, relist},
		{"silent: dead", quiet, false, true, dead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, decide(tc.e, tc.early, tc.est))
		})
	}
}

func TestEndedEarly(t *testing.T) {
	for _, tc := range []struct {
		elapsed, asked time.Duration
		want           bool
	}{
		{5 * time.Minute, 5 * time.Minute, false},
		{5*time.Minute + time.Second, 5 * time.Minute, false},
		{4*time.Minute + 40*time.Second, 5 * time.Minute, false}, // within a tenth
		{4 * time.Minute, 5 * time.Minute, true},
		{10 * time.Second, 5 * time.Minute, true},
		{500 * time.Millisecond, time.Second, false}, // at least a second of slack
		{0, 2 * time.Second, true},
	} {
		assert.Equal(t, tc.want, endedEarly(tc.elapsed, tc.asked), "ran %s of %s", tc.elapsed, tc.asked)
	}
}

func TestNextGap(t *testing.T) {
	for _, tc := range []struct {
		lasted, gap, want time.Duration
	}{
		{time.Second, minGap, 2 * minGap}, // ended soon: the next run lasts longer
		{30 * time.Second, 20 * time.Second, 40 * time.Second},
		{time.Minute, 4 * time.Minute, maxGap}, // bounded
		{maxGap, 4 * time.Minute, minGap},      // a long run resets it
		{time.Hour, maxGap, minGap},
	} {
		assert.Equal(t, tc.want, nextGap(tc.lasted, tc.gap), "lasted %s, gap %s", tc.lasted, tc.gap)
	}
}

func TestBookmarkSplitAcrossReads(t *testing.T) {
	word := []byte("BOOKMARK")
	for _, tc := range []struct {
		before, after string
		want          bool
	}{
		{`..."type":"BOOK`, `MARK","object"...`, true},
		{`...B`, `OOKMARK...`, true},
		{`...BOOKMAR`, `K...`, true},
		{`...BOOKMARK`, `...`, false}, // whole in the earlier read: found there
		{`...BOOK`, `...MARK`, false},
		{``, `BOOKMARK`, false}, // whole in this read: found there
	} {
		assert.Equal(t, tc.want, splitAcross([]byte(tc.before), []byte(tc.after), word), "%q | %q", tc.before, tc.after)
	}
}

func TestTailKeepsTheLastBytes(t *testing.T) {
	b := &trackedBody{}
	b.keep([]byte("abc"))
	assert.Equal(t, "abc", string(b.tail))
	long := make([]byte, tail+10)
	for i := range long {
		long[i] = byte('a' + i%26)
	}
	b.keep(long)
	assert.Equal(t, string(long[10:]), string(b.tail))
	b.keep([]byte("xyz"))
	assert.Len(t, b.tail, tail)
	assert.Equal(t, "xyz", string(b.tail[tail-3:]))
	assert.Equal(t, string(long[13:]), string(b.tail[:tail-3]))
}
