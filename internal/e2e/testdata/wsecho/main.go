// Command wsecho is a test backend of the Ingress tests: on :8080 it
// answers every path with its host name, the Host asked for and the path,
// and /ws is a WebSocket that echoes each message after its host name.
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/gorilla/websocket"
)

func main() {
	name, _ := os.Hostname()
	up := websocket.Upgrader{}
	http.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			typ, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(typ, append([]byte(name+": "), msg...)); err != nil {
				return
			}
		}
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s\n", name, r.Host, r.URL.Path)
	})
	log.Fatal(http.ListenAndServe(":8080", nil))
}
