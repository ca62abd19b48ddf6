package devenv

import "flotilla.dev/flotilla/addons"

// startAddonAgents runs, next to cluster's klusterlet, the agents of the
// shipped addons whose agent is a flotilla subcommand: OCM's Hosted mode, as
// processes with the cluster's kubeconfig. The command line is the one the
// addon's own Deployment carries (addons.HostedAgentArgs), so both ways run
// the same thing. An agent idles until its addon is enabled on the cluster.
// Only without nodes: with nodes the agents are the Pods their works deliver,
// from the image the hub's --addon-image names (the locally imported one).
func startAddonAgents(opts *Options, cluster string) error {
	reg := addons.Shipped()
	for _, name := range reg.Names() {
		a, _ := reg.Get(name)
		args, ok := addons.HostedAgentArgs(a, cluster)
		if !ok {
			continue
		}
		// Named after the klusterlet so `dev down` stops it first.
		if err := ensureProcess(opts, "klusterlet-"+cluster+"-addon-"+name,
			append(args, "--kubeconfig", opts.ClusterKubeconfig(cluster))); err != nil {
			return err
		}
	}
	return nil
}
