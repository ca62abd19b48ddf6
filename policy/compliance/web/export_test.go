package web

import "time"

// SetMaxCached sets the answer caches' bound for a test and returns a func
// that restores it.
func SetMaxCached(n int) (restore func()) {
	old := maxCached
	maxCached = n
	return func() { maxCached = old }
}

// CachedTokens is how many token answers a (NewAuthorizer) holds.
func CachedTokens(a Authorizer) int {
	aa := a.(*apiserverAuthorizer)
	aa.mu.Lock()
	defer aa.mu.Unlock()
	return len(aa.tokens)
}

// ParseQuery is parseQuery for tests: the filter and since it reads.
func ParseQuery(q map[string][]string, now time.Time, window time.Duration) (standard, control string, clusters []string, since time.Time, err error) {
	r, err := parseQuery(q, now, window)
	return r.filter.Standard, r.filter.Control, r.filter.Clusters, r.since, err
}
