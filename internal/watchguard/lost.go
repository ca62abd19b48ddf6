package watchguard

import (
	"fmt"
	"time"
)

// DefaultSilence: three bookmarks missed (the apiserver sends one about every
// minute on a live watch).
const DefaultSilence = 3 * time.Minute

// Lost says that an apiserver connection the agent's caches hang on was cut
// or went silent: the caches may have missed changes.
type Lost struct {
	// Probe names the apiserver ("hub", "cluster").
	Probe string
	// Resource is the watch that went silent ("" for a cut: every watch of
	// the connection).
	Resource string
	// Reason is "cut" or "silent".
	Reason string
}

func (l *Lost) Error() string {
	if l.Reason == dead.String() {
		return fmt.Sprintf("the watch of %s on the %s apiserver delivered nothing, not even a bookmark: it is dead", l.Resource, l.Probe)
	}
	return fmt.Sprintf("the connection to the %s apiserver was cut while the agent's watches depended on it", l.Probe)
}
