// A peer of lesson 03's connector for connector-vs-peers (beside it): Go's net/http with its defaults,
// a goroutine per connection, on the same two routes. Standard library only.
//
//	peer_go --port 0
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	port := flag.Int("port", 8080, "TCP port on 127.0.0.1; 0 picks a free one")
	flag.Parse()

	http.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "hello\n")
	})
	http.HandleFunc("/benchmark", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Second) // parks the goroutine, not the thread
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"message":"slept with time.Sleep","sleep_ms":1000}`+"\n")
	})

	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer_go:", err)
		os.Exit(1)
	}
	fmt.Printf("peer_go: listening on http://%s\n", listener.Addr())
	// Go's listener uses the kernel's somaxconn as its backlog; the default SIGTERM ends it.
	fmt.Fprintln(os.Stderr, "peer_go:", http.Serve(listener, nil))
	os.Exit(1)
}
