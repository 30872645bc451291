//! The lab's own certificate authority and server certificate, made once per
//! lab with the openssl command, so that TLS is tested with verification on.

use std::process::Command;

use crate::{LabError, Layout};

/// Every file the openssl commands below write.
const OPENSSL_OUTPUTS: [&str; 6] = [
    "ca.key",
    "ca.pem",
    "ca.srl",
    "server.key",
    "server.csr",
    "server.pem",
];

/// Creates the CA and the server certificate if they do not exist yet.
/// Files are checked without following links (a link is not a certificate
/// the lab made), and whatever stands in the place of a file openssl is about
/// to write is removed first, so openssl never writes through a link.
pub(crate) fn ensure_certificates(layout: &Layout) -> Result<(), LabError> {
    let dir = layout.tls_dir();
    crate::dir::ensure_dir(&dir, 0o755, None)?;
    if [layout.ca_cert(), layout.server_cert(), layout.server_key()]
        .iter()
        .all(|path| crate::dir::is_regular_file(path))
    {
        return Ok(());
    }
    for name in OPENSSL_OUTPUTS {
        crate::dir::remove_if_present(&dir.join(name))?;
    }
    let ext = dir.join("server.ext");
    crate::dir::write_file(
        &ext,
        b"subjectAltName = DNS:localhost, IP:127.0.0.1\n\
         basicConstraints = CA:FALSE\n\
         keyUsage = digitalSignature, keyEncipherment\n\
         extendedKeyUsage = serverAuth\n",
        0o644,
    )?;
    let path = |name: &str| dir.join(name).display().to_string();
    let ec_key = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    // P-256 keys: generated in milliseconds, accepted by rustls, Dovecot and Postfix.
    let mut ca = vec!["req".to_owned(), "-x509".to_owned()];
    ca.extend(ec_key.map(str::to_owned));
    ca.extend(["-days", "3650", "-subj", "/CN=peakhour-lab-CA"].map(str::to_owned));
    ca.extend([
        "-keyout".to_owned(),
        path("ca.key"),
        "-out".to_owned(),
        path("ca.pem"),
    ]);
    let mut csr = vec!["req".to_owned()];
    csr.extend(ec_key.map(str::to_owned));
    csr.extend(["-subj", "/CN=localhost"].map(str::to_owned));
    csr.extend([
        "-keyout".to_owned(),
        path("server.key"),
        "-out".to_owned(),
        path("server.csr"),
    ]);
    let sign: Vec<String> = vec![
        "x509".into(),
        "-req".into(),
        "-days".into(),
        "3650".into(),
        "-in".into(),
        path("server.csr"),
        "-CA".into(),
        path("ca.pem"),
        "-CAkey".into(),
        path("ca.key"),
        "-CAcreateserial".into(),
        "-extfile".into(),
        path("server.ext"),
        "-out".into(),
        path("server.pem"),
    ];
    let steps = [ca, csr, sign];
    for args in steps {
        let output = Command::new("openssl")
            .args(&args)
            .output()
            .map_err(|e| LabError::Spawn {
                program: "openssl".into(),
                reason: e.to_string(),
            })?;
        if !output.status.success() {
            return Err(LabError::Spawn {
                program: format!("openssl {}", args.join(" ")),
                reason: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
    }
    Ok(())
}
