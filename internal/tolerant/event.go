package tolerant

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
)

// ReasonUndecodable is the reason of the Warning Event EventReporter records.
const ReasonUndecodable = "Undecodable"

// maxNote keeps an Event note under the events API's 1 KiB limit.
const maxNote = 1000

// EventReporter returns a Reporter that records a Warning Event on the skipped
// object, saying that it is ignored and why.
func EventReporter(rec events.EventRecorder) Reporter {
	return func(d Dropped) {
		obj := &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: d.GVK.GroupVersion().String(), Kind: d.GVK.Kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name, UID: types.UID(d.UID),
				ResourceVersion: d.ResourceVersion},
		}
		note := "Flotilla cannot decode this object and ignores it until it is fixed or deleted: " + d.Err.Error()
		if len(note) > maxNote {
			note = strings.ToValidUTF8(note[:maxNote-3], "") + "..."
		}
		rec.Eventf(obj, nil, corev1.EventTypeWarning, ReasonUndecodable, "Ignore", "%s", note)
	}
}
