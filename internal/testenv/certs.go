package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the certificate material of one environment: a CA, one serving certificate for
// every API server (all listen on 127.0.0.1) and an admin client certificate.
type pki struct {
	caCert, caKey               []byte // PEM
	serveCert, serveKey         []byte
	adminCert, adminKey         []byte
	caFile                      string
	serveCertFile, serveKeyFile string
}

func newPKI(dir string) (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now().Add(-time.Hour)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "flotilla-testenv-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := &pki{caCert: pemBlock("CERTIFICATE", caDER)}
	if p.caKey, err = keyPEM(caKey); err != nil {
		return nil, err
	}
	p.serveCert, p.serveKey, err = signLeaf(ca, caKey, 2, pkix.Name{CommonName: "kube-apiserver"},
		x509.ExtKeyUsageServerAuth, []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")})
	if err != nil {
		return nil, err
	}
	p.adminCert, p.adminKey, err = signLeaf(ca, caKey, 3,
		pkix.Name{CommonName: "flotilla-admin", Organization: []string{"system:masters"}},
		x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, err
	}
	p.caFile = filepath.Join(dir, "ca.crt")
	p.serveCertFile = filepath.Join(dir, "apiserver.crt")
	p.serveKeyFile = filepath.Join(dir, "apiserver.key")
	for f, b := range map[string][]byte{p.caFile: p.caCert, p.serveCertFile: p.serveCert, p.serveKeyFile: p.serveKey} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func signLeaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, serial int64, subject pkix.Name,
	usage x509.ExtKeyUsage, dns []string, ips []net.IP) (certPEM, keyPEMBytes []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now().Add(-time.Hour)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      subject,
		NotBefore:    now,
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	kp, err := keyPEM(key)
	return pemBlock("CERTIFICATE", der), kp, err
}

// writeServiceAccountKeys writes a fresh signing key pair for one API server: each cluster
// gets its own key and issuer, so a token of one cluster is worthless on another.
func writeServiceAccountKeys(dir string) (pubFile, privFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	priv, err := keyPEM(key)
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	pubFile, privFile = filepath.Join(dir, "sa.pub"), filepath.Join(dir, "sa.key")
	if err := os.WriteFile(privFile, priv, 0o600); err != nil {
		return "", "", err
	}
	return pubFile, privFile, os.WriteFile(pubFile, pemBlock("PUBLIC KEY", pubDER), 0o600)
}

func keyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
