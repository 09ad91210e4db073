package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// admit serves an admission webhook that allows every request and changes nothing, over HTTPS with the
// given certificate: what any webhook call costs on this node before its own work (bench/chart.ts
// compares tenantkit's webhooks against it). HTTP/1.1 only, as tenantkit's webhook server and most Go
// webhooks since HTTP/2's rapid-reset advisory serve.
func admit(port, certFile, keyFile string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Request *struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 3<<20)).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "expected an admission.k8s.io/v1 AdmissionReview with a request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "admission.k8s.io/v1",
			"kind":       "AdmissionReview",
			"response":   map[string]any{"uid": review.Request.UID, "allowed": true},
		})
	})
	server := &http.Server{
		Addr:         ":" + port,
		Handler:      mux,
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	fmt.Printf("admitting everything on :%s (HTTPS)\n", port)
	if err := server.ListenAndServeTLS(certFile, keyFile); err != nil {
		fail("admit: %v", err)
	}
}
