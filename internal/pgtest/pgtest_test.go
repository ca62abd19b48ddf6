package pgtest

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartWithListen: a server on an address takes the password over TCP
// and refuses a wrong one.
func TestStartWithListen(t *testing.T) {
	ctx := context.Background()
	s := StartWith(t, Options{Listen: "127.0.0.1"})
	require.NotEmpty(t, s.Password(), "a random password by default")
	db := s.NewDatabase(t)
	u, err := url.Parse(db)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", u.Hostname())

	conn, err := pgx.Connect(ctx, db)
	require.NoError(t, err)
	require.NoError(t, conn.Ping(ctx))
	conn.Close(ctx)

	u.User = url.UserPassword("postgres", "wrong")
	_, err = pgx.Connect(ctx, u.String())
	assert.ErrorContains(t, err, "password authentication failed")
}
