// CoreDNS for the real node, with the four plugins hack/node/Corefile uses and no others: the full build (every
// plugin, with the cloud providers' SDKs) took 666 s of the cold run's 73 minutes, this one about a third of that.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
)

func init() {
	// The order CoreDNS's own plugin.cfg gives these directives.
	dnsserver.Directives = []string{"bind", "errors", "kubernetes", "forward"}
}

func main() { coremain.Run() }
