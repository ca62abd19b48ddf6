package sqldb

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A SQLite database keeps its statement journals and temporary tables in
// memory: in a Pod with a read-only root file system there is no
// temporary directory, and a statement that writes many rows failed with
// "disk I/O error (6410)".
func TestSQLiteNeedsNoTemporaryDirectory(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), Schema{Table: "t_migrations", LockKey: 1,
		Migrations: []string{`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`}})
	require.NoError(t, err)
	defer db.Close()
	var store int
	require.NoError(t, db.QueryRow(`PRAGMA temp_store`).Scan(&store))
	assert.Equal(t, 2, store, "temp_store MEMORY")
}
