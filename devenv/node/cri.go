package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// removeSandboxes stops and removes every Pod sandbox of the node's containerd
// through the CRI, as the kubelet would: containers stop, the CNI plugins
// release the Pod's addresses and interfaces, mounts and network namespaces go.
func removeSandboxes(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list Pod sandboxes on %s: %w", socket, err)
	}
	var errs []error
	for _, sb := range list.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop Pod sandbox %s (%s/%s): %w", sb.Id, sb.GetMetadata().GetNamespace(), sb.GetMetadata().GetName(), err))
			continue
		}
		if err := removeSandbox(ctx, rt, sb.Id); err != nil {
			errs = append(errs, fmt.Errorf("remove Pod sandbox %s: %w", sb.Id, err))
		}
	}
	return errors.Join(errs...)
}

// removeSandbox removes a stopped sandbox, trying again for a while: a
// container of it may still be changing state in containerd ("failed to set
// removing state for container"), as the kubelet's own cleanup retries too.
func removeSandbox(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string) error {
	for {
		_, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}
