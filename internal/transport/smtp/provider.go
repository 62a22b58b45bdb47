package smtp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
)

// ProviderConfig is the Config of an smtp Provider: its baseURL (ParseURL), the username and
// password of its Secret, and, when the Secret holds one, the PEM bundle of the CA its relay's
// certificate is checked against instead of the system's roots. attachments fetches attachment
// URLs.
func ProviderConfig(baseURL, username, password string, caPEM []byte, attachments *http.Client) (Config, error) {
	host, port, security, err := ParseURL(baseURL)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Host: host, Port: port, Security: security, Username: username, Password: password, HTTP: attachments}
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return Config{}, errors.New("smtp: the Secret's caCert holds no PEM certificate")
		}
		cfg.TLSConfig = &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}
	}
	return cfg, nil
}
