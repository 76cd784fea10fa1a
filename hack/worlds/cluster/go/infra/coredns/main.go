// CoreDNS with the plugins its two Corefiles use and no others: the real node's (hack/worlds/node/Corefile: bind,
// errors, kubernetes, forward) and kubeadm's default one in the kind cluster (hack/worlds/kind/up.sh takes this binary
// for its coredns Deployment: errors, health, ready, kubernetes, prometheus, forward, cache, loop, reload,
// loadbalance). The full build (every plugin, with the cloud providers' SDKs) was much of a cold run (docs/dev/testing.md).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func init() {
	// In the order of CoreDNS's own plugin.cfg (a request goes through them in this order).
	dnsserver.Directives = []string{"reload", "bind", "ready", "health", "prometheus", "errors", "loadbalance", "cache",
		"kubernetes", "loop", "forward"}
}

func main() { coremain.Run() }
