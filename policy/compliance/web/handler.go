package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// Paths the handler serves.
const (
	PagePath = "/compliance"
	APIPath  = "/api/compliance"
)

// Options configures the handler. Every field documents its default.
type Options struct {
	// Reader lists the hub's policies (the hub's cache). Required.
	Reader client.Reader
	// Auth authenticates and authorises callers. Required.
	Auth Authorizer
	// History adds trends and changes. Default nil: the report alone.
	History history.Store
	// Window is the default history window (?since overrides it). Default 30 days.
	Window time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Handler serves PagePath and APIPath.
type Handler struct{ o Options }

// New returns the handler.
func New(o Options) (*Handler, error) {
	if o.Reader == nil || o.Auth == nil {
		return nil, fmt.Errorf("compliance web: Options.Reader and Options.Auth are required")
	}
	if o.Window <= 0 {
		o.Window = 30 * 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Handler{o: o}, nil
}

// Document is the JSON served at APIPath: the report (schema
// compliance.flotilla.dev/v1) with the history of the window when the hub
// records one.
type Document struct {
	*compliance.Report
	History *history.Summary `json:"history,omitempty"`
}

// contentSecurity forbids everything but the page's inline styles: the page
// has no script and loads nothing.
const contentSecurity = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch req.URL.Path {
	case LoginPath:
		h.login(w, req)
		return
	case LogoutPath:
		h.logout(w, req)
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	token, ok := bearer(req)
	if !ok {
		if req.URL.Path == PagePath {
			loginPage(w, http.StatusUnauthorized, "")
			return
		}
		unauthorized(w, "no bearer token: send Authorization: Bearer <token> (a token the hub apiserver accepts)")
		return
	}
	ctx := req.Context()
	user, err := h.o.Auth.Authenticate(ctx, token)
	if err != nil {
		http.Error(w, "cannot check the token with the hub apiserver: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if user == nil {
		if req.URL.Path == PagePath {
			loginPage(w, http.StatusUnauthorized, "The hub apiserver does not accept this token.")
			return
		}
		unauthorized(w, "the hub apiserver does not accept this token")
		return
	}
	doc, status, err := h.document(req, user)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	var buf bytes.Buffer
	if req.URL.Path == APIPath {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
	} else {
		if err := WriteHTML(&buf, doc); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", contentSecurity)
		w.Header().Set("X-Frame-Options", "DENY")
	}
	_, _ = w.Write(buf.Bytes())
}

func (h *Handler) document(req *http.Request, user *User) (*Document, int, error) {
	ctx := req.Context()
	now := h.o.Now()
	vals, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("query: %w", err)
	}
	q, err := parseQuery(vals, now, h.o.Window)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	in, err := compliance.Read(ctx, h.o.Reader)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	allowed, err := h.readable(req, user, in)
	if err != nil {
		return nil, http.StatusServiceUnavailable, err
	}
	in = filterInput(in, allowed)
	in.Now = now
	doc := &Document{Report: compliance.Build(in, q.filter)}
	if h.o.History != nil {
		keep := func(policy string) bool { ns, _, _ := strings.Cut(policy, "/"); return allowed(ns) }
		sum, err := history.SummarizeWithTrend(ctx, h.o.History, history.Query{Since: q.since}, keep, doc.Report, in, 0)
		if err != nil {
			return nil, http.StatusInternalServerError, err
		}
		doc.History = sum
	}
	return doc, http.StatusOK, nil
}

// readable returns which namespaces' policies the user may list: all when the
// user may list them cluster-wide, else those a per-namespace review allows.
func (h *Handler) readable(req *http.Request, u *User, in compliance.Input) (func(string) bool, error) {
	ctx := req.Context()
	all, err := h.o.Auth.CanList(ctx, u, "")
	if err != nil {
		return nil, err
	}
	if all {
		return func(string) bool { return true }, nil
	}
	ok := map[string]bool{}
	for _, p := range in.Roots {
		if _, seen := ok[p.Namespace]; seen {
			continue
		}
		if ok[p.Namespace], err = h.o.Auth.CanList(ctx, u, p.Namespace); err != nil {
			return nil, err
		}
	}
	return func(ns string) bool { return ok[ns] }, nil
}

// filterInput keeps the roots of allowed namespaces and their replicas.
func filterInput(in compliance.Input, allowed func(string) bool) compliance.Input {
	var out compliance.Input
	for _, p := range in.Roots {
		if allowed(p.Namespace) {
			out.Roots = append(out.Roots, p)
		}
	}
	for _, p := range in.Replicas {
		ns, _, ok := strings.Cut(p.Labels[policyv1.RootPolicyLabel], ".")
		if ok && allowed(ns) {
			out.Replicas = append(out.Replicas, p)
		}
	}
	return out
}

// bearer reads the token from the Authorization header, else from the
// cookie the login form sets.
func bearer(req *http.Request) (string, bool) {
	if h := req.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		token = strings.TrimSpace(token)
		return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
	}
	if c, err := req.Cookie(tokenCookie); err == nil && c.Value != "" {
		return c.Value, true
	}
	return "", false
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="flotilla-hub"`)
	http.Error(w, msg, http.StatusUnauthorized)
}
