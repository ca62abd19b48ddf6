package watchguard

import "time"

// ending is how one watch ended.
type ending int

const (
	// openFailed: the watch could not be opened (the apiserver did not answer).
	openFailed ending = iota
	// closed: the server closed the watch; closedEarly tells whether it was
	// before the time it asked for.
	closed
	// errorEvent: the watch delivered an ERROR event other than 410 Gone.
	errorEvent
	// expired: 410 Gone, the resourceVersion is too old.
	expired
	// quiet: nothing, not even a bookmark, for Silence.
	quiet
)

// verdict is what a watch that ended means for the run.
type verdict int

const (
	// again: open the watch again from the last resourceVersion.
	again verdict = iota
	// relist: read a fresh resourceVersion first (nothing was missed by the
	// agent's caches on this account).
	relist
	// cutOff: the connection was cut while the agent depended on it; the run
	// ends once the apiserver answers again.
	cutOff
	// dead: the watch went silent; the run ends now.
	dead
)

func (v verdict) String() string {
	return [...]string{"again", "relist", "cut", "silent"}[v]
}

// decide says what an ended watch means. established: a watch of this connection
// has been open before (the agent's caches are in use); early: a closed watch
// ended before its time.
func decide(e ending, early, established bool) verdict {
	switch e {
	case quiet:
		return dead
	case expired:
		return relist
	case closed:
		if !early {
			return again
		}
	}
	// Could not open, closed early, or an error: the connection broke. Before
	// anything depended on it, that is only a slow start.
	if established {
		return cutOff
	}
	return relist
}

// endedEarly tells whether a watch that ran for elapsed, having asked the
// server for asked, was closed before its time. The server's clock starts
// after the client's, so a watch that ran out ends at asked or a little
// after; a tenth of asked (at least a second) is left for clocks and
// scheduling.
func endedEarly(elapsed, asked time.Duration) bool {
	slack := max(asked/10, time.Second)
	return elapsed < asked-slack
}
