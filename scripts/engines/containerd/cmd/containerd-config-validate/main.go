// Command containerd-config-validate checks a containerd config.toml the way containerd 1.7 loads
// it at start: containerd's own LoadConfig (imports, version, plugin URIs), then the CRI plugin's
// section decoded onto the CRI plugin's defaults and held to its ValidatePluginConfig, as the CRI
// plugin's init does. containerd ignores keys it does not know; here every key no containerd type
// decodes is an error (a misspelt or 2.x-only key leaves a setting at its default, silently). With
// -cni-conf-dir, the CNI configuration directory is loaded with go-cni and libcni as the CRI
// plugin's Windows network set-up loads it (at least one network, its max-conf limit).
//
// Usage: containerd-config-validate [-print] [-cni-conf-dir DIR] FILE
//
// Built on Linux, so the CRI plugin's defaults are the Linux ones (the Windows defaults differ in
// runtime names and paths the file sets anyway). Exit status: 0 when containerd would accept the
// file, 1 when it would refuse it or a key is unknown (one line per error), 2 on a usage error.
// -print writes what the file resolves to (root, state, the CRI plugin's sandbox image and CNI
// directories) as JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	criconfig "github.com/containerd/containerd/pkg/cri/config"
	"github.com/containerd/containerd/plugin"
	srvconfig "github.com/containerd/containerd/services/server/config"
	gocni "github.com/containerd/go-cni"
	"github.com/pelletier/go-toml"
)

const criURI = "io.containerd.grpc.v1.cri"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// resolved is what -print shows.
type resolved struct {
	Version        int      `json:"version"`
	Root           string   `json:"root"`
	State          string   `json:"state"`
	SandboxImage   string   `json:"sandboxImage"`
	CNIBinDir      string   `json:"cniBinDir"`
	CNIConfDir     string   `json:"cniConfDir"`
	CNIMaxConfNum  int      `json:"cniMaxConfNum"`
	DefaultRuntime string   `json:"defaultRuntime"`
	Networks       []string `json:"networks,omitempty"`
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("containerd-config-validate", flag.ContinueOnError)
	flags.SetOutput(stderr)
	print := flags.Bool("print", false, "write what the file resolves to as JSON")
	cniDir := flags.String("cni-conf-dir", "", "load this CNI configuration directory as the CRI plugin does")
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: containerd-config-validate [-print] [-cni-conf-dir DIR] FILE")
		return 2
	}
	name := flags.Arg(0)
	if _, err := os.Stat(name); err != nil {
		fmt.Fprintf(stderr, "containerd-config-validate: %v\n", err)
		return 2
	}
	out, problems := check(name, *cniDir)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s: %s\n", name, p)
		}
		return 1
	}
	if *print {
		data, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(stdout, string(data))
		return 0
	}
	fmt.Fprintf(stdout, "%s: valid containerd configuration (version %d)\n", name, out.Version)
	return 0
}

func check(name, cniDir string) (resolved, []string) {
	var cfg srvconfig.Config
	if err := srvconfig.LoadConfig(name, &cfg); err != nil {
		return resolved{}, []string{fmt.Sprintf("containerd refuses it: %v", err)}
	}
	tree, err := toml.LoadFile(name)
	if err != nil {
		return resolved{}, []string{err.Error()}
	}
	problems := unknown(tree, reflect.TypeOf(srvconfig.Config{}), "")
	for uri := range cfg.Plugins {
		if uri != criURI {
			problems = append(problems, fmt.Sprintf("plugins.%q: not checked here (only the CRI plugin's section is)", uri))
		}
	}
	// The CRI plugin's registration: its defaults, then the file's section decoded onto them.
	def := criconfig.DefaultConfig()
	reg := &plugin.Registration{Type: plugin.GRPCPlugin, ID: "cri", Config: &def}
	if _, err := cfg.Decode(reg); err != nil {
		return resolved{}, append(problems, fmt.Sprintf("the CRI plugin's section does not decode: %v", err))
	}
	if section, ok := cfg.Plugins[criURI]; ok {
		problems = append(problems, unknown(&section, reflect.TypeOf(criconfig.PluginConfig{}), fmt.Sprintf("plugins.%q.", criURI))...)
	}
	if _, err := criconfig.ValidatePluginConfig(context.Background(), &def); err != nil {
		problems = append(problems, fmt.Sprintf("the CRI plugin refuses its configuration: invalid plugin config: %v", err))
	}
	out := resolved{
		Version:        cfg.GetVersion(),
		Root:           cfg.Root,
		State:          cfg.State,
		SandboxImage:   def.SandboxImage,
		CNIBinDir:      def.NetworkPluginBinDir,
		CNIConfDir:     def.NetworkPluginConfDir,
		CNIMaxConfNum:  def.NetworkPluginMaxConfNum,
		DefaultRuntime: def.ContainerdConfig.DefaultRuntimeName,
	}
	if cniDir != "" {
		// pkg/cri/server/service_windows.go: one network at least, the plugin's max-conf limit.
		c, err := gocni.New(gocni.WithMinNetworkCount(1), gocni.WithPluginConfDir(cniDir),
			gocni.WithPluginMaxConfNum(def.NetworkPluginMaxConfNum), gocni.WithPluginDir([]string{def.NetworkPluginBinDir}))
		if err == nil {
			err = c.Load(gocni.WithDefaultConf)
		}
		if err == nil {
			err = c.Status()
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("the CRI plugin's CNI set-up refuses %s: %v", cniDir, err))
		} else {
			for _, n := range c.GetConfig().Networks {
				out.Networks = append(out.Networks, n.Config.Name)
			}
		}
	}
	return out, problems
}

// unknown lists the keys of tree that no field of t (by its toml tag) decodes, recursively.
func unknown(tree *toml.Tree, t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	switch t.Kind() {
	case reflect.Map:
		if t.Elem() == reflect.TypeOf(toml.Tree{}) {
			return nil // decoded later, by its own type
		}
		for _, k := range tree.Keys() {
			out = append(out, unknownValue(tree.Get(k), t.Elem(), prefix+k+".")...)
		}
	case reflect.Struct:
		fields := tomlFields(t)
		for _, k := range tree.Keys() {
			f, ok := fields[k]
			if !ok {
				out = append(out, fmt.Sprintf("key %s%s: containerd %s has no such setting and ignores it", prefix, k, t.Name()))
				continue
			}
			out = append(out, unknownValue(tree.Get(k), f, prefix+k+".")...)
		}
	}
	sort.Strings(out)
	return out
}

func unknownValue(v interface{}, t reflect.Type, prefix string) []string {
	switch sub := v.(type) {
	case *toml.Tree:
		return unknown(sub, t, prefix)
	case []*toml.Tree:
		var out []string
		for _, s := range sub {
			out = append(out, unknown(s, t.Elem(), prefix)...)
		}
		return out
	}
	return nil
}

func tomlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("toml"), ",")[0]
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			for k, v := range tomlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		out[tag] = f.Type
	}
	return out
}
