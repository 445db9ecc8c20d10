// Command pulumi-language-nodejs is the Node.js language host the Pulumi engine starts for
// `runtime: nodejs` projects and policy packs. Upstream's host is a module of its own that the
// module proxy winfleet builds from does not serve; this one is built from the Pulumi SDK's Go
// module at the release the project pins and keeps to the upstream host's contract with the
// engine and with the SDK's own launchers (`@pulumi/pulumi/cmd/run` for programs,
// `cmd/run-policy-pack` for policy packs), which do the work: loading TypeScript through
// ts-node in the program's directory, connecting to the resource monitor, reporting errors.
//
// What it does not implement (the engine treats each as unsupported): dependency installation,
// code generation, packing, linking and templates. winfleet installs dependencies with npm at
// set-up and uses none of the others.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// version is stamped at build time (-ldflags -X main.version=…) with the SDK release.
var version = "v0.0.0"

// exitAfterReportedError is the exit code the SDK's launchers use when the program's error
// has already been shown to the user, so the engine must not print another one.
const exitAfterReportedError = 32

func main() {
	tracing := flag.String("tracing", "", "tracing endpoint (accepted for compatibility, unused)")
	_ = flag.Bool("typescript", true, "accepted for compatibility; the project's runtime options decide")
	root := flag.String("root", "", "project root (accepted for compatibility)")
	flag.Parse()
	_, _ = tracing, root

	node, err := exec.LookPath("node")
	if err != nil {
		fmt.Fprintln(os.Stderr, "pulumi-language-nodejs: node is not on PATH")
		os.Exit(1)
	}
	host := &languageHost{node: node}
	if flag.NArg() > 0 {
		host.engine = flag.Arg(0)
	}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(s, host)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: could not serve: %v\n", err)
		os.Exit(1)
	}
	// The engine reads the port from the first line of standard output.
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: %v\n", err)
		os.Exit(1)
	}
}

type languageHost struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	node string

	mu     sync.Mutex
	engine string
}

func (h *languageHost) engineAddress() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.engine
}

// Handshake records the engine's address when the engine hands it over this way rather than
// on the command line.
func (h *languageHost) Handshake(
	_ context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if req.GetEngineAddress() != "" {
		h.engine = req.GetEngineAddress()
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *languageHost) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// GetRequiredPlugins lists the resource plugins the program's installed packages declare
// (`"pulumi": {"resource": true}` in their package.json), as the upstream host does.
func (h *languageHost) GetRequiredPlugins(
	_ context.Context, req *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	dir := req.GetInfo().GetProgramDirectory()
	if dir == "" {
		dir = req.GetProgram()
	}
	modules, ok := findUp(dir, "node_modules")
	if !ok {
		return &pulumirpc.GetRequiredPluginsResponse{}, nil
	}
	plugins, err := pluginsIn(modules)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.GetRequiredPluginsResponse{Plugins: plugins}, nil
}

// Run starts the SDK's program launcher and waits for it, as the upstream host does: the
// configuration travels in PULUMI_CONFIG, the rest as the launcher's flags.
func (h *languageHost) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	dir := info.GetProgramDirectory()
	if dir == "" {
		dir = req.GetPwd()
	}
	launcher, err := sdkFile(dir, "cmd/run")
	if err != nil {
		return nil, err
	}
	options := info.GetOptions().AsMap()
	args := nodeArgs(options)
	args = append(args, launcher)
	flagIf := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name, value)
		}
	}
	flagIf("monitor", req.GetMonitorAddress())
	flagIf("engine", h.engineAddress())
	flagIf("organization", req.GetOrganization())
	flagIf("project", req.GetProject())
	flagIf("stack", req.GetStack())
	flagIf("pwd", req.GetPwd())
	flagIf("root-directory", info.GetRootDirectory())
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	if req.GetParallel() > 0 {
		flagIf("parallel", fmt.Sprint(req.GetParallel()))
	}
	program := info.GetEntryPoint()
	if program == "" {
		program = req.GetProgram()
	}
	if program == "" {
		program = "."
	}
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secretKeys, err := json.Marshal(nonNil(req.GetConfigSecretKeys()))
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(),
		"PULUMI_CONFIG="+string(config),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys),
		"PULUMI_NODEJS_TYPESCRIPT="+fmt.Sprint(typescript(options)),
	)
	if tsconfig, ok := options["tsconfig"].(string); ok && tsconfig != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+tsconfig)
	}

	cmd := exec.CommandContext(ctx, h.node, args...)
	cmd.Dir = req.GetPwd()
	cmd.Env = env
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return &pulumirpc.RunResponse{}, nil
	case errors.As(err, &exit) && exit.ExitCode() == exitAfterReportedError:
		return &pulumirpc.RunResponse{Bail: true}, nil
	case errors.As(err, &exit):
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exit.ExitCode())}, nil
	default:
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run the program with %s: %v", h.node, err)}, nil
	}
}

// RunPlugin runs a plugin written in Node.js. The engine asks for this to start a policy pack
// (kind "analyzer"): the SDK's policy-pack launcher runs with the engine's address and the
// pack's directory, and its output is streamed back line by line as the engine expects.
func (h *languageHost) RunPlugin(
	req *pulumirpc.RunPluginRequest, server pulumirpc.LanguageRuntime_RunPluginServer,
) error {
	info := req.GetInfo()
	dir := info.GetProgramDirectory()
	if dir == "" {
		dir = req.GetProgram()
	}
	var launcher string
	var err error
	switch req.GetKind() {
	case "analyzer":
		launcher, err = sdkFile(dir, "cmd/run-policy-pack")
	default:
		launcher, err = sdkFile(dir, "cmd/run-plugin")
	}
	if err != nil {
		return err
	}
	args := nodeArgs(info.GetOptions().AsMap())
	args = append(args, launcher)
	args = append(args, req.GetArgs()...)
	args = append(args, dir)

	cmd := exec.CommandContext(server.Context(), h.node, args...)
	cmd.Dir = req.GetPwd()
	// A policy pack runs in its own directory, where it and @pulumi/policy find its package.json,
	// whatever the program's directory is (the engine passes the program's).
	if cmd.Dir == "" || req.GetKind() == "analyzer" {
		cmd.Dir = dir
	}
	cmd.Env = append(os.Environ(), req.GetEnv()...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return status.Errorf(codes.Internal, "could not start %s: %v", launcher, err)
	}
	var send sync.Mutex
	var wg sync.WaitGroup
	forward := func(r io.Reader, wrap func([]byte) *pulumirpc.RunPluginResponse) {
		defer wg.Done()
		lines := bufio.NewReader(r)
		for {
			line, err := lines.ReadBytes('\n')
			if len(line) > 0 {
				send.Lock()
				_ = server.Send(wrap(line))
				send.Unlock()
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go forward(stdout, func(b []byte) *pulumirpc.RunPluginResponse {
		return &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stdout{Stdout: b}}
	})
	go forward(stderr, func(b []byte) *pulumirpc.RunPluginResponse {
		return &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stderr{Stderr: b}}
	})
	wg.Wait()
	code := int32(0)
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return err
		}
		code = int32(exit.ExitCode())
	}
	return server.Send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: code}})
}

// typescript is the project's `runtime.options.typescript`, true unless set to false.
func typescript(options map[string]any) bool {
	if v, ok := options["typescript"].(bool); ok {
		return v
	}
	return true
}

// nodeArgs is `runtime.options.nodeargs`, split on spaces as upstream does.
func nodeArgs(options map[string]any) []string {
	if v, ok := options["nodeargs"].(string); ok && strings.TrimSpace(v) != "" {
		return strings.Fields(v)
	}
	return nil
}

// sdkFile finds `@pulumi/pulumi/<rel>` in the node_modules nearest to dir, as Node's own
// resolution would from a program in dir.
func sdkFile(dir, rel string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		candidate := filepath.Join(d, "node_modules", "@pulumi", "pulumi", filepath.FromSlash(rel))
		if _, err := os.Stat(candidate); err == nil {
			return candidate, nil
		}
		if filepath.Dir(d) == d {
			return "", status.Errorf(codes.FailedPrecondition,
				"@pulumi/pulumi is not installed for %s (looked for %s in every node_modules above it); run npm install", dir, rel)
		}
	}
}

func findUp(dir, name string) (string, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, name)); err == nil && st.IsDir() {
			return filepath.Join(d, name), true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

type packageJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Pulumi  struct {
		Resource bool   `json:"resource"`
		Name     string `json:"name"`
		Version  string `json:"version"`
		Server   string `json:"server"`
	} `json:"pulumi"`
}

// pluginsIn walks a node_modules tree (nested ones included) for packages that carry a
// resource plugin, each name and version once, sorted.
func pluginsIn(modules string) ([]*pulumirpc.PluginDependency, error) {
	seen := map[string]*pulumirpc.PluginDependency{}
	err := filepath.WalkDir(modules, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() || d.Name() != "package.json" {
			return nil
		}
		// Only a package's own manifest: node_modules/<pkg>/package.json or node_modules/@scope/<pkg>/package.json.
		parent := filepath.Dir(filepath.Dir(path))
		if filepath.Base(parent) != "node_modules" && filepath.Base(filepath.Dir(parent)) != "node_modules" {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var pkg packageJSON
		if json.Unmarshal(raw, &pkg) != nil || !pkg.Pulumi.Resource {
			return nil
		}
		name := pkg.Pulumi.Name
		if name == "" {
			name = strings.TrimPrefix(strings.TrimPrefix(pkg.Name, "@pulumi/"), "@")
		}
		v := pkg.Pulumi.Version
		if v == "" {
			v = pkg.Version
		}
		if v == "" || name == "" {
			return nil
		}
		if !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		seen[name+"@"+v] = &pulumirpc.PluginDependency{Name: name, Kind: "resource", Version: v, Server: pkg.Pulumi.Server}
		return nil
	})
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*pulumirpc.PluginDependency, 0, len(keys))
	for _, k := range keys {
		out = append(out, seen[k])
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
