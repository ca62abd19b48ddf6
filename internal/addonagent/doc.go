// Package addonagent is the agent side of addon registration: what an addon's
// agent on a managed cluster needs whatever it does, its hub credential
// (ReadHubCredential, from the Secret <addon>-hub-kubeconfig the klusterlet
// writes) and its health (RenewLease, the Lease the klusterlet reads).
//
// It sits on the ground floor (docs/structure.md) because agents of several
// rooms use it: the addons' own (addons/example) and the governance agents,
// which live beside their engine in policy/agent and may not import addons/.
package addonagent
