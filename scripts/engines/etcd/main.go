// Command etcd is etcd's server, built from its published server module at the release the
// project pins: the same entry point as etcd's own main package, which lives in a module the
// server module replaces with sibling directories.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
