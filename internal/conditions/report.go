package conditions

import (
	"context"
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Fit fits obj's status (FitStatus) and reports what it cut (Report), with the
// logger of ctx. rec may be nil where the writer may not create Events.
func Fit(ctx context.Context, rec events.EventRecorder, obj runtime.Object) {
	if cuts := FitStatus(obj); len(cuts) > 0 {
		Report(logr.FromContextOrDiscard(ctx), rec, obj, cuts)
	}
}

// maxNote keeps an Event note under the events API's 1 KiB limit.
const maxNote = 1000

// reported remembers the cuts already reported (object, path, text), so a
// controller that rewrites the same status every resync logs the full text
// once. Bounded: when full it starts over.
var reported = struct {
	sync.Mutex
	seen map[string]bool
}{seen: map[string]bool{}}

const maxReported = 4096

// Report logs each cut with its full text and records one Warning Event on obj
// listing them, once per distinct text.
func Report(log logr.Logger, rec events.EventRecorder, obj runtime.Object, cuts []Cut) {
	var kind, ns, name, uid string
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		kind = gvk.Kind
	} else {
		kind = reflect.Indirect(reflect.ValueOf(obj)).Type().Name()
	}
	if m, err := meta.Accessor(obj); err == nil {
		ns, name, uid = m.GetNamespace(), m.GetName(), string(m.GetUID())
	}
	var fresh []Cut
	reported.Lock()
	for _, c := range cuts {
		h := fnv.New64a()
		h.Write([]byte(c.Full))
		key := fmt.Sprintf("%s/%s/%s %s %x", uid, ns, name, c.Path, h.Sum64())
		if reported.seen[key] {
			continue
		}
		if len(reported.seen) >= maxReported {
			reported.seen = map[string]bool{}
		}
		reported.seen[key] = true
		fresh = append(fresh, c)
	}
	reported.Unlock()
	if len(fresh) == 0 {
		return
	}
	parts := make([]string, 0, len(fresh))
	for _, c := range fresh {
		log.Info("status message cut to fit its CRD; full text follows", "kind", kind, "namespace", ns, "name", name,
			"field", c.Path, "bytes", len(c.Full), "limit", c.Limit, "message", c.Full)
		parts = append(parts, fmt.Sprintf("%s (%d bytes)", c.Path, len(c.Full)))
	}
	if rec == nil {
		return
	}
	note := fmt.Sprintf("Status messages too long for the API were cut; the full text is in the log of the controller that wrote them: %s",
		strings.Join(parts, ", "))
	if len(note) > maxNote {
		note, _ = FitMessage(note, maxNote)
	}
	rec.Eventf(obj, nil, corev1.EventTypeWarning, ReasonMessageTruncated, "UpdateStatus", "%s", note)
}
