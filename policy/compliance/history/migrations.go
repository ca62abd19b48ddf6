package history

// migrations are the schema, applied in order; migration i (from 1) is
// recorded in schema_migrations once applied. Never edit a released
// migration: append a new one. The SQL is common to SQLite and PostgreSQL.
var migrations = []string{
	// 1: the events. An event is unique on all its fields, so recording it
	// twice keeps one row. Times are UTC microseconds since the epoch.
	`CREATE TABLE compliance_events (
		policy   TEXT   NOT NULL,
		template TEXT   NOT NULL,
		cluster  TEXT   NOT NULL,
		state    TEXT   NOT NULL,
		message  TEXT   NOT NULL,
		time_us  BIGINT NOT NULL,
		UNIQUE (policy, template, cluster, time_us, state, message)
	);
	CREATE INDEX compliance_events_cluster ON compliance_events (cluster, time_us);
	CREATE INDEX compliance_events_time ON compliance_events (time_us);`,
	// 2: the newest events of a policy on a cluster before a time (trends and
	// "what changed since" look back from the start of their window).
	`CREATE INDEX compliance_events_policy_cluster ON compliance_events (policy, cluster, time_us);`,
	// 3: the series (one row per policy, template and cluster that has
	// events), so that a window read finds every template of a pair without
	// scanning the pair's events. Record keeps it; Prune never empties a
	// series (it keeps the newest event of each).
	`CREATE TABLE compliance_series (
		policy   TEXT NOT NULL,
		cluster  TEXT NOT NULL,
		template TEXT NOT NULL,
		PRIMARY KEY (policy, cluster, template)
	);
	INSERT INTO compliance_series (policy, cluster, template) SELECT DISTINCT policy, cluster, template FROM compliance_events;`,
	// 4: a count of the writes that changed the events (Record adding any,
	// Prune deleting any), bumped in the same transaction, so that a store
	// keeping the last window in memory knows whether another process wrote
	// since (cache.go).
	`CREATE TABLE compliance_writes (
		id INTEGER PRIMARY KEY,
		n  BIGINT NOT NULL
	);
	INSERT INTO compliance_writes (id, n) VALUES (1, 0);`,
	// 5: the order of events within a second, and the hash chain (chain.go).
	// seq is the recording number (unique; NULL on the events recorded
	// before, which Record replaces by their microsecond twins as the
	// sources give them again); prev and hash are an event's link and hash.
	// A series keeps its head and its anchor (where its chain begins after
	// a prune); compliance_writes keeps the last seq, the store's head, and
	// both as they were after the last prune, and how many unchained events
	// there are and the newest time among them, so that an unchained row
	// added later is told (Verify).
	`ALTER TABLE compliance_events ADD COLUMN seq BIGINT;
	ALTER TABLE compliance_events ADD COLUMN prev TEXT;
	ALTER TABLE compliance_events ADD COLUMN hash TEXT;
	CREATE UNIQUE INDEX compliance_events_seq ON compliance_events (seq);
	CREATE INDEX compliance_events_series_seq ON compliance_events (policy, template, cluster, seq);
	ALTER TABLE compliance_series ADD COLUMN head TEXT NOT NULL DEFAULT '';
	ALTER TABLE compliance_series ADD COLUMN anchor TEXT NOT NULL DEFAULT '';
	ALTER TABLE compliance_writes ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE compliance_writes ADD COLUMN head TEXT NOT NULL DEFAULT '';
	ALTER TABLE compliance_writes ADD COLUMN base_seq BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE compliance_writes ADD COLUMN base_head TEXT NOT NULL DEFAULT '';
	ALTER TABLE compliance_writes ADD COLUMN legacy BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE compliance_writes ADD COLUMN chain_from_us BIGINT NOT NULL DEFAULT 0;
	UPDATE compliance_writes SET legacy = (SELECT COUNT(*) FROM compliance_events),
		chain_from_us = (SELECT COALESCE(MAX(time_us), 0) FROM compliance_events) WHERE id = 1;`,
}
