package node

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
)

// ServiceIP is the first Service IP of every control plane (the `kubernetes`
// Service), which Pods use to reach their apiserver.
const ServiceIP = "10.96.0.1"

// Plan is the address plan of one environment.
type Plan struct {
	// ID names the environment's host objects (devices, rules, cgroups): four hex
	// digits of the SHA-256 of its data folder.
	ID string
	// Octet is the second octet of the environment's 10.<Octet>.0.0/16.
	Octet int
}

// NewPlan derives the plan from the data folder (an absolute path).
func NewPlan(dataDir string) Plan {
	sum := sha256.Sum256([]byte(dataDir))
	return Plan{ID: hex.EncodeToString(sum[:2]), Octet: 100 + int(sum[2])%100}
}

// Bridge is the device holding the apiservers' and nodes' addresses.
func (p Plan) Bridge() string { return "fl" + p.ID + "-node" }

// HostIP is where the environment's apiservers listen.
func (p Plan) HostIP() string { return fmt.Sprintf("10.%d.0.1", p.Octet) }

// Subnet is the environment's whole range.
func (p Plan) Subnet() string { return fmt.Sprintf("10.%d.0.0/16", p.Octet) }

// NodeIP of node i (0 is the hub, i the i-th managed cluster).
func (p Plan) NodeIP(i int) string { return fmt.Sprintf("10.%d.0.%d", p.Octet, 10+i) }

// PodCIDR of node i.
func (p Plan) PodCIDR(i int) string { return fmt.Sprintf("10.%d.%d.0/24", p.Octet, 1+i) }

// PodBridge is the CNI bridge of node i's Pods.
func (p Plan) PodBridge(i int) string { return "fl" + p.ID + "-p" + strconv.Itoa(i) }

// Network is node i's CNI network name (also its IPAM and result-cache key).
func (p Plan) Network(i int) string { return "flotilla-" + p.ID + "-" + strconv.Itoa(i) }

// CgroupRoot is node i's kubelet cgroup root.
func (p Plan) CgroupRoot(i int) string { return "/flotilla-" + p.ID + "-" + strconv.Itoa(i) }

// MaxNodes bounds i (Pod ranges 10.<o>.1.0 .. 10.<o>.245.0, node IPs .10 .. .254).
const MaxNodes = 244

// Overlaps returns the host routes that fall in the environment's range and
// are not on its own devices; dev up refuses to start over them.
func (p Plan) Overlaps(routes []Route, own func(dev string) bool) []Route {
	_, mine, _ := net.ParseCIDR(p.Subnet())
	var out []Route
	for _, r := range routes {
		_, n, err := net.ParseCIDR(r.Dst)
		if err != nil || own(r.Dev) {
			continue
		}
		if mine.Contains(n.IP) || n.Contains(mine.IP) {
			if ones, _ := n.Mask.Size(); ones == 0 {
				continue // the default route
			}
			out = append(out, r)
		}
	}
	return out
}

// Route is one host route: destination CIDR and device.
type Route struct{ Dst, Dev string }
