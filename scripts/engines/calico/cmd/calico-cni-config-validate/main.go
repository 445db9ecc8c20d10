// Command calico-cni-config-validate checks a CNI network configuration (a .conf or .conflist file)
// the way the programs on a Windows node read it: libcni's loader (what containerd's CRI runs over
// its conf_dir), then, for every plugin of type calico or calico-ipam, Calico's CNI plugin decode
// (json.Unmarshal into its cni-plugin/pkg/types.NetConf, as the plugin's cmdAdd does first, and its
// CNI version check). Keys that neither Calico's NetConf nor CNI's portable NetConf decode are
// errors (the plugin would ignore them: always a mistake in generated configuration), except the
// four that only the Windows dataplane's decoder reads (containernetworking/plugins pkg/hns, a
// Windows-only package this Linux build cannot hold).
//
// Usage: calico-cni-config-validate [-print] FILE
//
// Exit status: 0 when every decoder accepts the file, 1 when one refuses it (one line per
// error), 2 on a usage or I/O error. -print writes the decoded Calico NetConf as JSON.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
	calico "github.com/projectcalico/calico/cni-plugin/pkg/types"
)

// windowsDataplaneKeys are the keys containernetworking/plugins pkg/hns.NetConf adds to CNI's
// portable NetConf; Calico's Windows dataplane decodes them in loadNetConf.
var windowsDataplaneKeys = []string{"apiVersion", "policies", "runtimeConfig", "loopbackDSR"}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("calico-cni-config-validate", flag.ContinueOnError)
	flags.SetOutput(stderr)
	print := flags.Bool("print", false, "write the decoded Calico NetConf as JSON")
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: calico-cni-config-validate [-print] FILE")
		return 2
	}
	name := flags.Arg(0)
	data, err := os.ReadFile(name)
	if err != nil {
		fmt.Fprintf(stderr, "calico-cni-config-validate: %v\n", err)
		return 2
	}
	plugins, problems := load(name, data)
	var decoded []calico.NetConf
	for i, p := range plugins {
		conf, errs := decodeCalico(p)
		for _, e := range errs {
			problems = append(problems, fmt.Sprintf("plugin %d (%s): %s", i, pluginType(p), e))
		}
		if conf != nil {
			decoded = append(decoded, *conf)
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s: %s\n", name, p)
		}
		return 1
	}
	if *print {
		out, _ := json.MarshalIndent(decoded, "", "  ")
		fmt.Fprintln(stdout, string(out))
		return 0
	}
	fmt.Fprintf(stdout, "%s: valid CNI configuration (%d plugins; Calico's decode accepts it)\n", name, len(plugins))
	return 0
}

// load reads the file with libcni, as a CRI runtime does, and returns each plugin's bytes (what a
// plugin gets on stdin, before the runtime adds its runtimeConfig).
func load(name string, data []byte) ([][]byte, []string) {
	var list *libcni.NetworkConfigList
	var err error
	if filepath.Ext(name) == ".conflist" {
		list, err = libcni.ConfListFromBytes(data)
	} else {
		var conf *libcni.NetworkConfig
		conf, err = libcni.ConfFromBytes(data)
		if err == nil {
			list, err = libcni.ConfListFromConf(conf)
		}
	}
	if err != nil {
		return nil, []string{fmt.Sprintf("libcni refuses it: %v", err)}
	}
	if len(list.Plugins) == 0 {
		return nil, []string{"libcni: the list holds no plugin"}
	}
	out := make([][]byte, 0, len(list.Plugins))
	for _, p := range list.Plugins {
		out = append(out, p.Bytes)
	}
	return out, nil
}

func pluginType(data []byte) string {
	var c cnitypes.NetConf
	_ = json.Unmarshal(data, &c)
	return c.Type
}

// decodeCalico decodes one plugin's configuration as Calico's plugin does; nil for a plugin of
// another type.
func decodeCalico(data []byte) (*calico.NetConf, []string) {
	var portable cnitypes.NetConf
	if err := json.Unmarshal(data, &portable); err != nil {
		return nil, []string{fmt.Sprintf("CNI's NetConf: %v", err)}
	}
	if portable.Type != "calico" && portable.Type != "calico-ipam" {
		return nil, nil
	}
	var problems []string
	conf := calico.NetConf{}
	// cni-plugin/pkg/plugin: json.Unmarshal(args.StdinData, &conf), else "failed to load netconf".
	if err := json.Unmarshal(data, &conf); err != nil {
		return nil, []string{fmt.Sprintf("Calico's plugin: failed to load netconf: %v", err)}
	}
	cniVersion := conf.CNIVersion
	if cniVersion == "" {
		cniVersion = "0.2.0"
	}
	if newer, err := version.GreaterThanOrEqualTo(cniVersion, "1.0.1"); err != nil {
		problems = append(problems, fmt.Sprintf("cniVersion %q: %v", conf.CNIVersion, err))
	} else if newer {
		problems = append(problems, fmt.Sprintf("Calico's plugin: unsupported CNI version %s", conf.CNIVersion))
	}
	if conf.IPAM.Type == "" {
		problems = append(problems, "ipam.type is empty: Calico's plugin runs no IPAM plugin")
	}
	problems = append(problems, unknownKeys(data)...)
	return &conf, problems
}

// unknownKeys lists the top-level keys no decoder on the node reads.
func unknownKeys(data []byte) []string {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return []string{err.Error()}
	}
	known := map[string]bool{}
	for _, t := range []reflect.Type{reflect.TypeOf(calico.NetConf{}), reflect.TypeOf(cnitypes.NetConf{})} {
		for _, k := range jsonKeys(t) {
			known[strings.ToLower(k)] = true
		}
	}
	for _, k := range windowsDataplaneKeys {
		known[strings.ToLower(k)] = true
	}
	var out []string
	for k := range raw {
		// encoding/json matches keys case-insensitively.
		if !known[strings.ToLower(k)] {
			out = append(out, fmt.Sprintf("key %q: no decoder on the node reads it (Calico's NetConf, CNI's NetConf, the Windows dataplane)", k))
		}
	}
	sort.Strings(out)
	return out
}

func jsonKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("json"), ",")[0]
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			keys = append(keys, jsonKeys(f.Type)...)
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		keys = append(keys, tag)
	}
	return keys
}
