package interop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestGrantRace(t *testing.T) {
	granted := time.Date(2026, 12, 2, 19, 35, 4, 0, time.UTC)
	const (
		early403   = `E1202 19:35:04.206943   13841 reflector.go:205] "Failed to watch" err="failed to list *v1beta1.ManagedClusterAddOn: managedclusteraddons.addon.open-cluster-management.io is forbidden: User \"x\" cannot list"`
		late403    = `E1202 19:35:09.000001   13841 reflector.go:205] "Failed to watch" err="failed to list *v1beta1.ManagedClusterAddOn: managedclusteraddons.addon.open-cluster-management.io is forbidden"`
		early404   = `E1202 19:35:04.100000   13841 reflector.go:205] "Failed to watch" err="failed to list *v1beta1.ManagedClusterAddOn: the server could not find the requested resource"`
		notKlog    = `failed v1beta1.ManagedClusterAddOn forbidden`
		shortLine  = `E1202 19:35`
		badMonth   = `E1302 19:35:04.206943 forbidden`
		atTheGrace = `E1202 19:35:06.000000 1 r.go:1] forbidden`
	)
	cases := []struct {
		name         string
		lines        []string
		excused, bad []string
	}{
		{"none", nil, nil, nil},
		{"a 403 before the grant took effect", []string{early403}, []string{early403}, nil},
		{"a 403 at the end of the grace", []string{atTheGrace}, []string{atTheGrace}, nil},
		{"a 403 after: the informer did not recover", []string{early403, late403}, []string{early403}, []string{late403}},
		{"not a 403: a missing version is never excused", []string{early404}, nil, []string{early404}},
		{"no readable time", []string{notKlog, shortLine, badMonth}, nil, []string{notKlog, shortLine, badMonth}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			excused, bad := grantRace(c.lines, granted, 2*time.Second, 2026, time.UTC)
			assert.Equal(t, c.excused, excused)
			assert.Equal(t, c.bad, bad)
		})
	}
}
