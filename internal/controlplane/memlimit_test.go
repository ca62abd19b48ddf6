package controlplane

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemLimitEnv(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: "", want: nil},
		{in: "2GiB", want: []string{"GOMEMLIMIT=2GiB"}},
		{in: "1536MiB", want: []string{"GOMEMLIMIT=1536MiB"}},
		{in: "1073741824", want: []string{"GOMEMLIMIT=1073741824"}},
		{in: "off", want: []string{"GOMEMLIMIT=off"}},
		{in: "2GB", bad: true}, // the runtime reads binary units only
		{in: "2 GiB", bad: true},
		{in: "-1", bad: true},
		{in: "lots", bad: true},
	} {
		got, err := memLimitEnv(c.in)
		if c.bad {
			require.Error(t, err, c.in)
			assert.Contains(t, err.Error(), EnvAPIServerGoMemLimit)
			assert.Contains(t, err.Error(), c.in)
			continue
		}
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
}
