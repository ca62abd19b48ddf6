package tolerant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Options configures a Filter. Every field documents its default.
type Options struct {
	// Scheme holds the Go types the process decodes into. Required.
	Scheme *runtime.Scheme
	// Groups are the API groups whose lists and watches are checked. Default:
	// every group of Scheme that client-go's built-in scheme does not hold.
	Groups []string
	// Log receives one line per skipped object version. Default: discard.
	Log logr.Logger
}

// Dropped describes one object version the Filter skipped.
type Dropped struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
	UID             string
	ResourceVersion string
	// Err is the decode error.
	Err error
}

func (d Dropped) String() string {
	name := d.Name
	if d.Namespace != "" {
		name = d.Namespace + "/" + d.Name
	}
	return fmt.Sprintf("%s %s", d.GVK.Kind, name)
}

// Reporter is told of each skipped object version once (the hub records an
// Event on the object). It must not block for long: it runs on the request path.
type Reporter func(Dropped)

// maxRemembered bounds the set of object versions already reported; when full
// it starts over (a long-lived bad object is then reported once more).
const maxRemembered = 10000

var undecodable = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "flotilla_undecodable_objects_total",
	Help: "Object versions skipped by the process's informers because they cannot be decoded into their Go type.",
}, []string{"group", "kind"})

func init() { metrics.Registry.MustRegister(undecodable) }

// Filter removes undecodable objects from list and watch responses. Create it
// with New, install it with Wrap; one Filter may serve several configs.
type Filter struct {
	scheme   *runtime.Scheme
	decoder  runtime.Decoder
	groups   sets.Set[string]
	log      logr.Logger
	reporter atomic.Pointer[Reporter]

	mu   sync.Mutex
	seen map[string]bool // "group/kind ns/name rv" already reported
}

// New returns a Filter for opts.
func New(opts Options) (*Filter, error) {
	if opts.Scheme == nil {
		return nil, fmt.Errorf("tolerant: Options.Scheme is required")
	}
	groups := sets.New(opts.Groups...)
	if len(opts.Groups) == 0 {
		for gvk := range opts.Scheme.AllKnownTypes() {
			if gvk.Group != "" && !scheme.Scheme.IsGroupRegistered(gvk.Group) {
				groups.Insert(gvk.Group)
			}
		}
	}
	log := opts.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	return &Filter{
		scheme:  opts.Scheme,
		decoder: jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, opts.Scheme, opts.Scheme, jsonserializer.SerializerOptions{}),
		groups:  groups,
		log:     log,
		seen:    map[string]bool{},
	}, nil
}

// SetReporter sets (or, with nil, clears) the Reporter. It may be called at
// any time, for example once the manager that owns the event recorder exists.
func (f *Filter) SetReporter(r Reporter) {
	if r == nil {
		f.reporter.Store(nil)
		return
	}
	f.reporter.Store(&r)
}

// Wrap returns a copy of cfg whose transport runs through the filter.
func (f *Filter) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &roundTripper{f: f, next: rt} })
	return cfg
}

type roundTripper struct {
	f    *Filter
	next http.RoundTripper
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK || !rt.f.checks(req.URL.Path) || !isJSON(resp) {
		return resp, err
	}
	if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
		resp.Body = &watchBody{f: rt.f, body: resp.Body, dec: json.NewDecoder(resp.Body)}
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if out, changed := rt.f.filterList(body); changed {
		body = out
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// checks tells whether path is under /apis/<group>/ of a checked group.
func (f *Filter) checks(path string) bool {
	i := strings.Index(path, "/apis/")
	if i < 0 {
		return false
	}
	group, _, _ := strings.Cut(path[i+len("/apis/"):], "/")
	return f.groups.Has(group)
}

func isJSON(resp *http.Response) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// typeMeta and objectMeta read what the filter needs without decoding the rest.
type typeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

type identity struct {
	typeMeta
	Metadata struct {
		Name            string `json:"name,omitempty"`
		Namespace       string `json:"namespace,omitempty"`
		UID             string `json:"uid,omitempty"`
		ResourceVersion string `json:"resourceVersion,omitempty"`
	} `json:"metadata"`
}

// filterList removes undecodable items from a JSON list; it returns the body
// unchanged (and false) when nothing was removed or it is not a list.
func (f *Filter) filterList(body []byte) ([]byte, bool) {
	var list struct {
		typeMeta
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(body, &list) != nil || list.Items == nil || !strings.HasSuffix(list.Kind, "List") {
		return body, false
	}
	gv, err := schema.ParseGroupVersion(list.APIVersion)
	if err != nil || !f.groups.Has(gv.Group) {
		return body, false
	}
	itemKind := gv.WithKind(strings.TrimSuffix(list.Kind, "List"))
	kept := make([]json.RawMessage, 0, len(list.Items))
	for _, item := range list.Items {
		if d, bad := f.check(item, itemKind); bad {
			f.report(d)
			continue
		}
		kept = append(kept, item)
	}
	if len(kept) == len(list.Items) {
		return body, false
	}
	// Rebuild the list with every other field as it was.
	var whole map[string]json.RawMessage
	if json.Unmarshal(body, &whole) != nil {
		return body, false
	}
	whole["items"], _ = json.Marshal(kept)
	out, err := json.Marshal(whole)
	if err != nil {
		return body, false
	}
	return out, true
}

// check decodes one object into its Go type; bad is true when that fails for
// a kind the scheme knows. fallback is the kind of a list's items (empty for
// a watch event's object, which names its own).
func (f *Filter) check(raw json.RawMessage, fallback schema.GroupVersionKind) (d Dropped, bad bool) {
	if fallback.Kind != "" && !f.scheme.Recognizes(fallback) {
		return Dropped{}, false
	}
	var defaults *schema.GroupVersionKind
	if fallback.Kind != "" {
		defaults = &fallback
	}
	_, gvk, err := f.decoder.Decode(raw, defaults, nil)
	if err == nil {
		return Dropped{}, false
	}
	// Only now read what the object says it is.
	var id identity
	if jerr := json.Unmarshal(raw, &id); jerr != nil {
		return Dropped{GVK: fallback, Err: err}, fallback.Kind != ""
	}
	if gvk == nil || gvk.Kind == "" {
		g := fallback
		if gv, perr := schema.ParseGroupVersion(id.APIVersion); perr == nil && id.Kind != "" {
			g = gv.WithKind(id.Kind)
		}
		gvk = &g
	}
	if !f.groups.Has(gvk.Group) || !f.scheme.Recognizes(*gvk) {
		return Dropped{}, false // not a kind this process decodes into a Go type
	}
	return Dropped{GVK: *gvk, Namespace: id.Metadata.Namespace, Name: id.Metadata.Name,
		UID: id.Metadata.UID, ResourceVersion: id.Metadata.ResourceVersion, Err: err}, true
}

// report logs, counts and reports d once per object version.
func (f *Filter) report(d Dropped) {
	key := fmt.Sprintf("%s/%s %s/%s %s", d.GVK.Group, d.GVK.Kind, d.Namespace, d.Name, d.ResourceVersion)
	f.mu.Lock()
	if f.seen[key] {
		f.mu.Unlock()
		return
	}
	if len(f.seen) >= maxRemembered {
		f.seen = map[string]bool{}
	}
	f.seen[key] = true
	f.mu.Unlock()

	undecodable.WithLabelValues(d.GVK.Group, d.GVK.Kind).Inc()
	f.log.Error(d.Err, "object cannot be decoded into its Go type; this process ignores it until it is fixed or deleted",
		"kind", d.GVK.Kind, "apiVersion", d.GVK.GroupVersion().String(), "namespace", d.Namespace, "name", d.Name,
		"resourceVersion", d.ResourceVersion)
	if r := f.reporter.Load(); r != nil {
		(*r)(d)
	}
}

// watchBody filters a JSON watch stream event by event.
type watchBody struct {
	f    *Filter
	body io.ReadCloser
	dec  *json.Decoder
	buf  bytes.Buffer
	err  error
}

func (w *watchBody) Read(p []byte) (int, error) {
	for w.buf.Len() == 0 {
		if w.err != nil {
			return 0, w.err
		}
		var raw json.RawMessage
		if err := w.dec.Decode(&raw); err != nil {
			w.err = err
			continue
		}
		if out := w.f.filterEvent(raw); out != nil {
			w.buf.Write(out)
			w.buf.WriteByte('\n')
		}
	}
	return w.buf.Read(p)
}

func (w *watchBody) Close() error { return w.body.Close() }

type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// filterEvent returns the event to pass on, or nil to drop it.
func (f *Filter) filterEvent(raw json.RawMessage) []byte {
	var ev watchEvent
	if json.Unmarshal(raw, &ev) != nil {
		return raw
	}
	switch ev.Type {
	case "ADDED", "MODIFIED", "DELETED":
	default: // BOOKMARK, ERROR
		return raw
	}
	d, bad := f.check(ev.Object, schema.GroupVersionKind{})
	if !bad {
		return raw
	}
	f.report(d)
	if ev.Type == "ADDED" {
		return nil
	}
	var stub identity
	_ = json.Unmarshal(ev.Object, &stub)
	obj, err := json.Marshal(stub)
	if err != nil {
		return nil
	}
	out, err := json.Marshal(watchEvent{Type: "DELETED", Object: obj})
	if err != nil {
		return nil
	}
	return out
}
