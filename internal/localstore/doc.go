// Package localstore is the agent's own store: a bbolt file under
// data-dir/agent that keeps what the node needs to run without the API,
// and answers for the API while the server cannot be reached.
//
// It sits in the agent's API clients as an http.RoundTripper (Store.Config,
// Store.Transport), so the kubelet, the proxy, the DNS and the pod network
// keep their informers and GETs unchanged:
//
//   - Lists and watches of the collections the node follows (its pods, the
//     Services and EndpointSlices, the Nodes, the servers' endpoints, the
//     runtime classes) are recorded: a whole list, or a watch's initial
//     events once their bookmark ends them, replace the collection; later
//     events update it, with the resource version they reached.
//   - GETs of the objects pods use (Secrets, ConfigMaps, claims and
//     volumes, service accounts, the Node, runtime classes) and the
//     answers of service account TokenRequests are recorded; Secrets and
//     tokens are sealed with AES-256-GCM under a key kept 0600 beside the
//     file (KeyFile).
//   - When a request finds the server unreachable (no connection, or a
//     502/503/504), lists and GETs are answered from the store (with the
//     FromStoreHeader), and so are tokens that have not expired and
//     watches with initial events (how informers list: the collection, its
//     bookmark, then an open stream until the server answers again); for
//     ten seconds after that, without asking. A watch from a resource
//     version always goes to the server: an informer whose list came from
//     the store keeps trying to watch from the stored version, and when
//     the server is back it resumes from there (or lists again), and the
//     API's view wins.
//
// Writes are queued and committed in batches by one goroutine, each batch
// one bbolt transaction, so a crash at any point leaves the last committed
// batch. What no stored pod refers to any more is dropped (collect).
//
//	store, err := localstore.Open(filepath.Join(dataDir, "agent"), localstore.Options{Log: log})
//	if err != nil { … }
//	defer store.Close()
//	client, err := kubernetes.NewForConfig(store.Config(creds.RESTConfig()))
package localstore
