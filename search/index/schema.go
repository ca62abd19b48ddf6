package index

import "flotilla.dev/flotilla/internal/sqldb"

// migrations is the index's migrations, in search_migrations (a database may
// hold the compliance history too: their tables do not meet). Never edit a
// released migration: append one.
var migrations = sqldb.Schema{Table: "search_migrations", LockKey: 7316022, Migrations: []string{
	// 1: the objects, one row per cluster, resource (group/resource: the
	// version is not part of an object's identity) and UID, with the
	// columns searches filter on and the whole sanitized JSON; their labels
	// and their containers' images, one row each, for selectors and image
	// searches; and the resources each cluster syncs (discovery).
	`CREATE TABLE search_objects (
		cluster    TEXT    NOT NULL,
		gr         TEXT    NOT NULL,
		uid        TEXT    NOT NULL,
		version    TEXT    NOT NULL,
		kind       TEXT    NOT NULL,
		namespace  TEXT    NOT NULL,
		name       TEXT    NOT NULL,
		rv         TEXT    NOT NULL,
		owner      TEXT    NOT NULL,
		created_us BIGINT  NOT NULL,
		phase      TEXT    NOT NULL,
		reasons    TEXT    NOT NULL,
		ready      TEXT    NOT NULL,
		ready_replicas BIGINT NOT NULL,
		replicas   BIGINT  NOT NULL,
		object     TEXT    NOT NULL,
		PRIMARY KEY (cluster, gr, uid)
	);
	CREATE INDEX search_objects_list ON search_objects (gr, cluster, namespace, name, uid);
	CREATE INDEX search_objects_name ON search_objects (gr, name);
	CREATE TABLE search_labels (
		cluster TEXT NOT NULL,
		gr      TEXT NOT NULL,
		uid     TEXT NOT NULL,
		key     TEXT NOT NULL,
		value   TEXT NOT NULL,
		PRIMARY KEY (cluster, gr, uid, key)
	);
	CREATE INDEX search_labels_key ON search_labels (gr, key, value);
	CREATE TABLE search_images (
		cluster TEXT NOT NULL,
		gr      TEXT NOT NULL,
		uid     TEXT NOT NULL,
		image   TEXT NOT NULL,
		PRIMARY KEY (cluster, gr, uid, image)
	);
	CREATE INDEX search_images_image ON search_images (gr, image);
	CREATE TABLE search_resources (
		cluster    TEXT    NOT NULL,
		gr         TEXT    NOT NULL,
		grp        TEXT    NOT NULL,
		version    TEXT    NOT NULL,
		resource   TEXT    NOT NULL,
		kind       TEXT    NOT NULL,
		namespaced INTEGER NOT NULL,
		PRIMARY KEY (cluster, gr)
	);`,
	// 2: the index's epoch, a random name written once by Open: an agent
	// that sees it change (the hub's database was replaced, or another
	// replica answers with its own) compares its digests again.
	`CREATE TABLE search_epoch (
		id    INTEGER PRIMARY KEY,
		epoch TEXT NOT NULL
	);`,
	// 3: containers' state reasons, one row each, as images: a search for
	// CrashLoopBackOff reads the reason's rows, not every Pod.
	`CREATE TABLE search_reasons (
		cluster TEXT NOT NULL,
		gr      TEXT NOT NULL,
		uid     TEXT NOT NULL,
		reason  TEXT NOT NULL,
		PRIMARY KEY (cluster, gr, uid, reason)
	);
	CREATE INDEX search_reasons_reason ON search_reasons (gr, reason);`,
	// 4: images and reasons carry their object's namespace and name, and
	// their indexes hold the order of a page (cluster, namespace, name,
	// uid): a search for an image or a reason reads its first page's rows
	// in order and stops, where it sorted every hit (at 2 million objects,
	// 20,000 Pods with one image took 230 ms on PostgreSQL).
	`ALTER TABLE search_images ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
	ALTER TABLE search_images ADD COLUMN name TEXT NOT NULL DEFAULT '';
	UPDATE search_images SET
		namespace = (SELECT o.namespace FROM search_objects o WHERE o.cluster = search_images.cluster AND o.gr = search_images.gr AND o.uid = search_images.uid),
		name = (SELECT o.name FROM search_objects o WHERE o.cluster = search_images.cluster AND o.gr = search_images.gr AND o.uid = search_images.uid);
	DROP INDEX search_images_image;
	CREATE INDEX search_images_page ON search_images (gr, image, cluster, namespace, name, uid);
	ALTER TABLE search_reasons ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
	ALTER TABLE search_reasons ADD COLUMN name TEXT NOT NULL DEFAULT '';
	UPDATE search_reasons SET
		namespace = (SELECT o.namespace FROM search_objects o WHERE o.cluster = search_reasons.cluster AND o.gr = search_reasons.gr AND o.uid = search_reasons.uid),
		name = (SELECT o.name FROM search_objects o WHERE o.cluster = search_reasons.cluster AND o.gr = search_reasons.gr AND o.uid = search_reasons.uid);
	DROP INDEX search_reasons_reason;
	CREATE INDEX search_reasons_page ON search_reasons (gr, reason, cluster, namespace, name, uid);`,
	// 5: each object's stored size, and an index that holds every
	// cluster's objects with their sizes: a cluster's usage (Limits) is
	// counted from the index alone, without reading the objects.
	`ALTER TABLE search_objects ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
	UPDATE search_objects SET size = LENGTH(object);
	CREATE INDEX search_objects_usage ON search_objects (cluster, size);`,
	// 6: an object's size is what the index keeps for it (storedSize, in
	// characters here): its JSON, the copies of its columns in its row and
	// indexes, and the rows of its labels, images and reasons with theirs,
	// which an agent chooses (migration 5 counted the JSON alone).
	`UPDATE search_objects SET size = LENGTH(object)
		+ 160 + 4 * LENGTH(cluster) + 4 * LENGTH(gr) + 3 * LENGTH(uid) + LENGTH(version) + LENGTH(kind) + 2 * LENGTH(namespace) + 3 * LENGTH(name)
		+ LENGTH(rv) + LENGTH(owner) + LENGTH(phase) + LENGTH(reasons) + LENGTH(ready)
		+ COALESCE((SELECT SUM(96 + 2 * LENGTH(l.cluster) + 3 * LENGTH(l.gr) + 2 * LENGTH(l.uid) + 3 * LENGTH(l.key) + 2 * LENGTH(l.value))
			FROM search_labels l WHERE l.cluster = search_objects.cluster AND l.gr = search_objects.gr AND l.uid = search_objects.uid), 0)
		+ COALESCE((SELECT SUM(96 + 3 * LENGTH(i.cluster) + 3 * LENGTH(i.gr) + 3 * LENGTH(i.uid) + 3 * LENGTH(i.image) + 2 * LENGTH(i.namespace) + 2 * LENGTH(i.name))
			FROM search_images i WHERE i.cluster = search_objects.cluster AND i.gr = search_objects.gr AND i.uid = search_objects.uid), 0)
		+ COALESCE((SELECT SUM(96 + 3 * LENGTH(r.cluster) + 3 * LENGTH(r.gr) + 3 * LENGTH(r.uid) + 3 * LENGTH(r.reason) + 2 * LENGTH(r.namespace) + 2 * LENGTH(r.name))
			FROM search_reasons r WHERE r.cluster = search_objects.cluster AND r.gr = search_objects.gr AND r.uid = search_objects.uid), 0);`,
}}
