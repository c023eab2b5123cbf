package main

// The few calls of toxiproxy's HTTP API the drop mode needs, as java-examples/common/Toxics.java makes
// them for chapter 4's Java example: only on the one named proxy, and only toxics whose names start
// with this example's prefix.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"pipelab/ch10/lab"
)

const toxicPrefix = "pipelab-ch04-go-drop-"

var proxyName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

type toxics struct {
	api, proxy string
	rate       int64 // the bandwidth of the last addDrop, KB/s
	http       *http.Client
}

// newToxics checks the two arguments' form only (exit code 2 with one sentence).
func newToxics(api, proxy string) *toxics {
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		lab.Stop(2, "%s: toxiproxy-api-url must be an http URL such as http://127.0.0.1:8474, not '%s'; usage: %s.",
			example, api, usage)
	}
	if !proxyName.MatchString(proxy) {
		lab.Stop(2, "%s: proxy-name must be a toxiproxy proxy name such as pipelab-redis, not '%s'; usage: %s.",
			example, proxy, usage)
	}
	return &toxics{api: strings.TrimSuffix(api, "/"), proxy: proxy, http: &http.Client{Timeout: 10 * time.Second}}
}

// call makes one request; a status outside `ok` is an error. Returns the body.
func (t *toxics) call(method, path string, body any, ok ...int) ([]byte, int, error) {
	var in io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		in = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, t.api+path, in)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	for _, status := range ok {
		if resp.StatusCode == status {
			return out, status, nil
		}
	}
	return out, resp.StatusCode, fmt.Errorf("%s %s answered %d: %s", method, path, resp.StatusCode,
		strings.TrimSpace(string(out)))
}

// check: the API answers, the proxy exists, listens on `port` and carries no toxics but ours (leftovers of
// an interrupted run are removed). Exit code 4 when the API is unreachable, 2 for the wrong proxy.
func (t *toxics) check(port int) {
	body, status, err := t.call("GET", "/proxies/"+t.proxy, nil, 200, 404)
	if err != nil {
		lab.Stop(4, "Cannot reach the toxiproxy API at %s: %v; start toxiproxy or pass its API URL.", t.api, err)
	}
	if status == 404 {
		lab.Stop(2, "Toxiproxy at %s has no proxy named '%s'; create it in front of Redis or pass its name.",
			t.api, t.proxy)
	}
	var p struct {
		Listen string `json:"listen"`
	}
	_ = json.Unmarshal(body, &p)
	if !strings.HasSuffix(p.Listen, fmt.Sprintf(":%d", port)) {
		lab.Stop(2, "Proxy '%s' listens on %s, not on port %d; pass the proxy's listen address as host and port.",
			t.proxy, p.Listen, port)
	}
	t.removeOurs()
	if others := t.names(); len(others) > 0 {
		lab.Stop(2, "Proxy '%s' already has toxics %v; remove them first, they would change what reaches Redis.",
			t.proxy, others)
	}
}

func (t *toxics) names() []string {
	body, _, err := t.call("GET", "/proxies/"+t.proxy+"/toxics", nil, 200)
	if err != nil {
		lab.Stop(1, "Toxiproxy: %v.", err)
	}
	var list []struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(body, &list)
	var out []string
	for _, toxic := range list {
		out = append(out, toxic.Name)
	}
	return out
}

// addDrop cuts a transfer of `size` bytes towards Redis: bandwidth upstream at the rate that takes
// passMs for it, reset_peer downstream, which swallows Redis's replies and closes the client's
// connection cutMs after the first of them (PartialPipeline.java says why downstream).
func (t *toxics) addDrop(size int64, passMs, cutMs int) error {
	t.rate = max(1, (size+int64(passMs)-1)/int64(passMs))
	for _, toxic := range []map[string]any{
		{"name": toxicPrefix + "bandwidth", "type": "bandwidth", "stream": "upstream", "toxicity": 1.0,
			"attributes": map[string]any{"rate": t.rate}},
		{"name": toxicPrefix + "reset", "type": "reset_peer", "stream": "downstream", "toxicity": 1.0,
			"attributes": map[string]any{"timeout": cutMs}},
	} {
		if _, _, err := t.call("POST", "/proxies/"+t.proxy+"/toxics", toxic, 200); err != nil {
			return err
		}
	}
	return nil
}

// removeOurs deletes this example's toxics, reset first so no new connection gets it; a problem is
// reported, not fatal (it runs on the way out too).
func (t *toxics) removeOurs() {
	for _, name := range []string{"reset", "bandwidth"} {
		if _, _, err := t.call("DELETE", "/proxies/"+t.proxy+"/toxics/"+toxicPrefix+name, nil, 204, 200, 404); err != nil {
			fmt.Fprintf(os.Stderr, "Warning: could not remove toxic %s%s from proxy '%s': %v\n", toxicPrefix, name, t.proxy, err)
		}
	}
}

// incrBytes is the size of one INCR of `key` in RESP: *2 $4 INCR $len key, each line ending in CRLF.
func incrBytes(key string) int64 {
	return int64(len(fmt.Sprintf("*2\r\n$4\r\nINCR\r\n$%d\r\n", len(key))) + len(key) + 2)
}
