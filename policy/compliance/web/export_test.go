package web

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

// AccessKey is accessKey, for tests.
var AccessKey = accessKey
