// Command kube-proxy-config-validate checks a KubeProxyConfiguration (kubeproxy.config.k8s.io,
// YAML or JSON) the way kube-proxy loads its --config file: decoded strictly with kube-proxy's own
// scheme (defaults applied, the internal type), its featureGates set on Kubernetes' feature gates
// as kube-proxy's Complete does, then held to kube-proxy's validation.Validate.
//
// Usage: kube-proxy-config-validate [-print] [FILE]   (standard input when FILE is absent or "-")
//
// Built on Linux, Validate checks the mode against the Linux modes; a Windows node runs
// "kernelspace", so for that mode the Linux mode error is replaced by the Windows rule (the only
// mode Windows takes besides blank). Exit status: 0 when kube-proxy would accept the file, 1 when
// it would refuse it (or a field is unknown, which kube-proxy only warns about), 2 on a usage or
// I/O error. -print writes the defaulted configuration's Windows settings as JSON.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"

	// Registers Kubernetes' feature gates (with their defaults) on the default gate.
	"k8s.io/kubernetes/pkg/features"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyconfigscheme "k8s.io/kubernetes/pkg/proxy/apis/config/scheme"
	"k8s.io/kubernetes/pkg/proxy/apis/config/validation"
)

func main() {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("kube-proxy-config-validate", flag.ContinueOnError)
	flags.SetOutput(stderr)
	print := flags.Bool("print", false, "write the defaulted configuration's Windows settings as JSON")
	if err := flags.Parse(args); err != nil || flags.NArg() > 1 {
		fmt.Fprintln(stderr, "usage: kube-proxy-config-validate [-print] [FILE]")
		return 2
	}
	name := "-"
	if flags.NArg() == 1 {
		name = flags.Arg(0)
	}
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "kube-proxy-config-validate: %v\n", err)
		return 2
	}
	config, problems, err := check(data)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s: %s\n", name, p)
		}
		return 1
	}
	if *print {
		out, _ := json.MarshalIndent(map[string]interface{}{
			"mode":             config.Mode,
			"hostnameOverride": config.HostnameOverride,
			"kubeconfig":       config.ClientConnection.Kubeconfig,
			"clusterCIDRs":     config.DetectLocal.ClusterCIDRs,
			"featureGates":     config.FeatureGates,
			"winkernel":        config.Winkernel,
		}, "", "  ")
		fmt.Fprintln(stdout, string(out))
		return 0
	}
	fmt.Fprintf(stdout, "%s: valid KubeProxyConfiguration\n", name)
	return 0
}

func check(data []byte) (*kubeproxyconfig.KubeProxyConfiguration, []string, error) {
	var problems []string
	obj, gvk, err := proxyconfigscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		if !runtime.IsStrictDecodingError(err) {
			return nil, nil, fmt.Errorf("kube-proxy cannot decode it: %w", err)
		}
		// kube-proxy falls back to a lenient decode and warns; here that is an error.
		problems = append(problems, fmt.Sprintf("%v (kube-proxy ignores it)", err))
		obj, gvk, err = proxyconfigscheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("kube-proxy cannot decode it: %w", err)
		}
	}
	config, ok := obj.(*kubeproxyconfig.KubeProxyConfiguration)
	if !ok {
		return nil, nil, fmt.Errorf("not a KubeProxyConfiguration: %v", gvk)
	}
	// kube-proxy's Complete sets the file's gates on the process's gates: an unknown one fails it.
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(config.FeatureGates); err != nil {
		problems = append(problems, fmt.Sprintf("featureGates: %v", err))
	}
	for _, e := range validation.Validate(config) {
		if strings.HasPrefix(e.Field, "KubeProxyConfiguration.Mode") && config.Mode == kubeproxyconfig.ProxyModeKernelspace {
			continue // the Linux rule; Windows takes kernelspace (below)
		}
		problems = append(problems, e.Error())
	}
	if config.Mode != "" && config.Mode != kubeproxyconfig.ProxyModeKernelspace {
		problems = append(problems, fmt.Sprintf("KubeProxyConfiguration.Mode: Unsupported value: %q: on Windows must be %q or blank", config.Mode, kubeproxyconfig.ProxyModeKernelspace))
	}
	// pkg/proxy/winkernel's NewProxier refuses enableDSR without the WinDSR gate.
	if config.Winkernel.EnableDSR && !utilfeature.DefaultFeatureGate.Enabled(features.WinDSR) {
		problems = append(problems, "winkernel.enableDSR: kube-proxy refuses it: WinDSR feature gate not enabled")
	}
	return config, problems, nil
}
