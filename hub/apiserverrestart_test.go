package hub

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRestartOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before, now map[string]string
		want        bool
	}{
		{"first read", nil, map[string]string{"apiserver-a": "apiserver-a_1"}, false},
		{"unchanged", map[string]string{"apiserver-a": "apiserver-a_1"}, map[string]string{"apiserver-a": "apiserver-a_1"}, false},
		{"restarted: a new holder", map[string]string{"apiserver-a": "apiserver-a_1"}, map[string]string{"apiserver-a": "apiserver-a_2"}, true},
		{"between delete and create", map[string]string{"apiserver-a": "apiserver-a_1"}, map[string]string{}, false},
		{"one of three restarted", map[string]string{"a": "a_1", "b": "b_1", "c": "c_1"}, map[string]string{"a": "a_1", "b": "b_2", "c": "c_1"}, true},
		{"a replica added", map[string]string{"a": "a_1"}, map[string]string{"a": "a_1", "b": "b_1"}, false},
		{"a replica removed", map[string]string{"a": "a_1", "b": "b_1"}, map[string]string{"a": "a_1"}, false},
		{"the one apiserver renamed", map[string]string{"a": "a_1"}, map[string]string{"z": "z_1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := restartOf(tc.before, tc.now)
			assert.Equal(t, tc.want, got)
		})
	}
}
