package apigroup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/aggregated"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/document"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/web"
)

// The group version and its resources.
const (
	Group         = "compliance.flotilla.dev"
	Version       = "v1alpha1"
	Reports       = "reports"
	Histories     = "histories"
	Verifications = "verifications"
)

// Paths of the resources, under the hub apiserver.
const (
	ReportsPath   = "/apis/" + Group + "/" + Version + "/" + Reports
	HistoriesPath = "/apis/" + Group + "/" + Version + "/" + Histories
	// VerificationsPath checks the history's hash chain (history.Store's
	// Verify); optional parameter head, a head an earlier report carried.
	VerificationsPath = "/apis/" + Group + "/" + Version + "/" + Verifications
)

// Options configures the group. Every field documents its default.
type Options struct {
	// Reader lists the hub's policies (the hub's cache). Required.
	Reader client.Reader
	// Access answers the SubjectAccessReviews (web.NewAuthorizer). Required.
	Access web.Authorizer
	// History is the recorded history. Default nil: reports have no history
	// and histories answer 404 (nothing recorded).
	History history.Store
	// Window is the default history window (since overrides it). Default 30 days.
	Window time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// New returns the group for the aggregated server.
func New(o Options) (aggregated.Group, error) {
	if o.Reader == nil || o.Access == nil {
		return aggregated.Group{}, errors.New("compliance API: Options.Reader and Options.Access are required")
	}
	if o.Window <= 0 {
		o.Window = 30 * 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &handlers{o: o}
	return aggregated.Group{
		Name: Group, Version: Version, AllAuthenticated: true,
		Resources: []aggregated.Resource{
			{Name: Reports, SingularName: "report", Kind: "ComplianceReport", Handler: h.report},
			{Name: Histories, SingularName: "history", Kind: "ComplianceHistory", Handler: h.history},
			{Name: Verifications, SingularName: "verification", Kind: "ComplianceVerification", Handler: h.verify},
		},
	}, nil
}

type handlers struct{ o Options }

func (h *handlers) report(w http.ResponseWriter, req *http.Request, u user.Info) {
	q, now, ok := h.query(w, req, ReportsPath)
	if !ok {
		return
	}
	o, err := document.ParseQuery(q, now, h.o.Window)
	if err == nil {
		err = document.CheckServedWindow(o.Since, now)
	}
	if err != nil {
		aggregated.Error(w, http.StatusBadRequest, err)
		return
	}
	src, ok := h.source(w, req, u, now)
	if !ok {
		return
	}
	doc, err := document.Build(req.Context(), src, o)
	if err != nil {
		aggregated.Error(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, doc)
}

func (h *handlers) history(w http.ResponseWriter, req *http.Request, u user.Info) {
	q, now, ok := h.query(w, req, HistoriesPath)
	if !ok {
		return
	}
	o, err := document.ParseHistoryQuery(q, now, h.o.Window)
	if err == nil {
		err = document.CheckServedWindow(o.Since, now)
	}
	if err != nil {
		aggregated.Error(w, http.StatusBadRequest, err)
		return
	}
	if h.o.History == nil {
		aggregated.Error(w, http.StatusNotFound, document.ErrNoHistory)
		return
	}
	src, ok := h.source(w, req, u, now)
	if !ok {
		return
	}
	doc, err := document.BuildHistory(req.Context(), src, o)
	if err != nil {
		aggregated.Error(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, doc)
}

// verify checks the whole store's chain. It reads every policy's history, so
// it is for those who may list policies in all namespaces; anyone else gets
// 403.
func (h *handlers) verify(w http.ResponseWriter, req *http.Request, u user.Info) {
	q, _, ok := h.query(w, req, VerificationsPath)
	if !ok {
		return
	}
	for k := range q {
		if k != "head" {
			aggregated.Error(w, http.StatusBadRequest, fmt.Errorf("query parameter %q is not known: the parameter is head", k))
			return
		}
	}
	heads := q["head"]
	if len(heads) > 1 {
		aggregated.Error(w, http.StatusBadRequest, errors.New("query parameter head is given more than once"))
		return
	}
	for _, hd := range heads {
		if len(hd) != 64 || strings.Trim(hd, "0123456789abcdef") != "" {
			aggregated.Error(w, http.StatusBadRequest, fmt.Errorf("head %q is not a chain head (64 lower-case hex digits)", hd))
			return
		}
	}
	if h.o.History == nil {
		aggregated.Error(w, http.StatusNotFound, document.ErrNoHistory)
		return
	}
	all, err := h.o.Access.CanList(req.Context(), webUser(u), "")
	if err != nil {
		aggregated.Error(w, http.StatusServiceUnavailable, err)
		return
	}
	if !all {
		aggregated.Error(w, http.StatusForbidden, fmt.Errorf("%s may not list policies.policy.open-cluster-management.io in all namespaces: verifying reads the whole history", u.GetName()))
		return
	}
	v, err := h.o.History.Verify(req.Context(), heads...)
	if err != nil {
		aggregated.Error(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, v)
}

// query reads the query parameters, or answers 400; a path below the
// resource's (a name) is 404: the documents have none.
func (h *handlers) query(w http.ResponseWriter, req *http.Request, path string) (url.Values, time.Time, bool) {
	if strings.TrimSuffix(req.URL.Path, "/") != path {
		aggregated.Error(w, http.StatusNotFound, fmt.Errorf("%s has no named objects: read %s", req.URL.Path, path))
		return nil, time.Time{}, false
	}
	q, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		aggregated.Error(w, http.StatusBadRequest, errors.New("query: "+err.Error()))
		return nil, time.Time{}, false
	}
	return q, h.o.Now(), true
}

// source reads the policies and which namespaces u may see, or answers
// 500 (the policies) or 503 (the reviews).
func (h *handlers) source(w http.ResponseWriter, req *http.Request, u user.Info, now time.Time) (document.Source, bool) {
	ctx := req.Context()
	in, err := compliance.Read(ctx, h.o.Reader)
	if err != nil {
		aggregated.Error(w, http.StatusInternalServerError, err)
		return document.Source{}, false
	}
	in.Now = now
	wu := webUser(u)
	readable, err := document.Readable(ctx, in, func(ctx context.Context, ns string) (bool, error) { return h.o.Access.CanList(ctx, wu, ns) })
	if err != nil {
		aggregated.Error(w, http.StatusServiceUnavailable, err)
		return document.Source{}, false
	}
	return document.Source{Input: in, History: h.o.History, Readable: readable}, true
}

func webUser(u user.Info) *web.User {
	extra := map[string]authenticationv1.ExtraValue{}
	for k, v := range u.GetExtra() {
		extra[k] = v
	}
	return &web.User{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = compliance.WriteJSON(w, v)
}
