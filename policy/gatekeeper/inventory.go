package gatekeeper

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Inventory is data.inventory: the objects referential templates may read,
// in Gatekeeper's layout (cluster[groupVersion][kind][name] for
// cluster-scoped objects, namespace[namespace][groupVersion][kind][name] for
// namespaced ones).
type Inventory struct {
	store storage.Store
}

// NewInventory returns an empty inventory.
func NewInventory() *Inventory {
	return &Inventory{store: inmem.New()}
}

// Store is the OPA store templates are compiled against.
func (inv *Inventory) Store() storage.Store { return inv.store }

func inventoryPath(obj *unstructured.Unstructured) storage.Path {
	if ns := obj.GetNamespace(); ns != "" {
		return storage.Path{"inventory", "namespace", ns, obj.GetAPIVersion(), obj.GetKind(), obj.GetName()}
	}
	return storage.Path{"inventory", "cluster", obj.GetAPIVersion(), obj.GetKind(), obj.GetName()}
}

// Replace sets the inventory to objs.
func (inv *Inventory) Replace(ctx context.Context, objs []*unstructured.Unstructured) error {
	root := map[string]any{"cluster": map[string]any{}, "namespace": map[string]any{}}
	for _, o := range objs {
		p := inventoryPath(o)
		m := root
		for _, seg := range p[1 : len(p)-1] {
			next, ok := m[seg].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[seg] = next
			}
			m = next
		}
		m[p[len(p)-1]] = o.Object
	}
	return storage.Txn(ctx, inv.store, storage.WriteParams, func(txn storage.Transaction) error {
		var op storage.PatchOp = storage.ReplaceOp
		if _, err := inv.store.Read(ctx, txn, storage.Path{"inventory"}); storage.IsNotFound(err) {
			op = storage.AddOp
		}
		return inv.store.Write(ctx, txn, op, storage.Path{"inventory"}, root)
	})
}

// Put adds or replaces one object.
func (inv *Inventory) Put(ctx context.Context, obj *unstructured.Unstructured) error {
	p := inventoryPath(obj)
	return storage.Txn(ctx, inv.store, storage.WriteParams, func(txn storage.Transaction) error {
		if err := storage.MakeDir(ctx, inv.store, txn, p[:len(p)-1]); err != nil {
			return fmt.Errorf("inventory: %w", err)
		}
		return inv.store.Write(ctx, txn, storage.AddOp, p, obj.Object)
	})
}

// Delete removes one object; a missing one is no error.
func (inv *Inventory) Delete(ctx context.Context, obj *unstructured.Unstructured) error {
	p := inventoryPath(obj)
	err := storage.Txn(ctx, inv.store, storage.WriteParams, func(txn storage.Transaction) error {
		return inv.store.Write(ctx, txn, storage.RemoveOp, p, nil)
	})
	if storage.IsNotFound(err) {
		return nil
	}
	return err
}
