package registration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"
)

// The agent refuses at start what the hub's admission policies would refuse
// when it creates its ManagedCluster, naming the setting.
func TestOptionsDefaultsRefuseWhatTheHubRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		urls []string
		host string
		secs int32
		want string
	}{
		{name: "default URL and lease", host: "https://127.0.0.1:6443"},
		{name: "http URL", urls: []string{"http://10.0.0.1:8080"}, host: "https://h"},
		{name: "not a url", urls: []string{"not a url"}, host: "https://h", want: `cluster URL "not a url"`},
		{name: "no scheme from the kubeconfig", host: "127.0.0.1:6443", want: `cluster URL "127.0.0.1:6443"`},
		{name: "no host", urls: []string{"https://"}, host: "https://h", want: "spec.managedClusterClientConfigs[].url"},
		{name: "lease over a day", host: "https://h", secs: MaxLeaseDurationSeconds + 1, want: "lease duration 86401s"},
		{name: "lease a day", host: "https://h", secs: MaxLeaseDurationSeconds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{ClusterName: "c1", SpokeConfig: &rest.Config{Host: tc.host}, ExternalServerURLs: tc.urls, LeaseDurationSeconds: tc.secs}
			err := o.defaults()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
