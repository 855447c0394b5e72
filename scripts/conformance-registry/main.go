// Command conformance-registry serves the suite's image archives
// read-only over the registry API (internal/imageregistry), for make
// conformance: the nodes' certs.d mirror configuration sends pulls of
// registry.k8s.io there, so that the tests that pull with
// imagePullPolicy Always find their images with no internet.
//
//	conformance-registry -listen 10.198.0.1:5000 ARCHIVE...
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
	"time"

	"orch/internal/imageregistry"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:5000", "address to serve on")
	flag.Parse()
	reg := imageregistry.New()
	for _, archive := range flag.Args() {
		f, err := os.Open(archive)
		if err != nil {
			log.Fatal(err)
		}
		err = reg.Load(f)
		f.Close()
		if err != nil {
			log.Fatalf("%s: %v", archive, err)
		}
	}
	srv := &http.Server{Addr: *listen, Handler: reg, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
