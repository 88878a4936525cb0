//! A tiny HTTP/1.1 server on 127.0.0.1 for provider tests. It replays
//! scripted replies (whole bodies, chunked bodies flushed piece by piece,
//! bodies cut off mid-way, bodies held open), records every request it
//! received, and notices when a client goes away from a held-open body.
//! One request per connection (`connection: close`).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON; panics if it is not valid JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("request body is valid JSON")
    }
}

/// How a reply body is sent.
#[derive(Clone, Debug)]
pub enum Body {
    /// With `content-length`.
    Full(Vec<u8>),
    /// Chunked transfer encoding: one HTTP chunk per piece, each flushed.
    Chunks(Vec<Vec<u8>>),
    /// Chunked pieces, then the connection is closed without the final chunk.
    Cut(Vec<Vec<u8>>),
    /// Chunked pieces, then held open until the client disconnects.
    Hold(Vec<Vec<u8>>),
}

/// One scripted reply.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Reply {
    /// A 200 event stream sent as the given pieces.
    pub fn sse_pieces(pieces: Vec<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: sse_headers(),
            body: Body::Chunks(pieces),
        }
    }

    /// A 200 event stream sent in one piece.
    pub fn sse(body: impl AsRef<[u8]>) -> Self {
        Self::sse_pieces(vec![body.as_ref().to_vec()])
    }

    /// A 200 event stream whose connection closes after `body`.
    pub fn sse_cut(body: impl AsRef<[u8]>) -> Self {
        Self {
            status: 200,
            headers: sse_headers(),
            body: Body::Cut(vec![body.as_ref().to_vec()]),
        }
    }

    /// A 200 event stream that sends `body` and then nothing, forever.
    pub fn sse_hold(body: impl AsRef<[u8]>) -> Self {
        Self {
            status: 200,
            headers: sse_headers(),
            body: Body::Hold(vec![body.as_ref().to_vec()]),
        }
    }

    /// A JSON reply with `content-length`.
    pub fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: Body::Full(body.as_bytes().to_vec()),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

fn sse_headers() -> Vec<(String, String)> {
    vec![("content-type".to_owned(), "text/event-stream".to_owned())]
}

type Script = Box<dyn Fn(usize, &Recorded) -> Reply + Send + Sync>;

struct State {
    script: Script,
    requests: Mutex<Vec<Recorded>>,
    disconnects: tokio::sync::watch::Sender<usize>,
    /// Answers to the questions strata asks a local server about its
    /// window (`GET /v1/models`, `/props`, `/api/v0/models`, `POST
    /// /api/show`), by path; any other such question gets a 404. They are
    /// kept apart from the scripted replies and the recorded requests.
    discovery: Mutex<Vec<(String, Reply)>>,
    discovery_requests: Mutex<Vec<Recorded>>,
    /// strata's counts asked of a llama.cpp server (`POST /tokenize`),
    /// answered from `discovery` too (a 404 unless told), kept apart.
    tokenize_requests: Mutex<Vec<Recorded>>,
}

/// Whether a request is one of strata's questions about the served window.
fn is_discovery(request: &Recorded) -> bool {
    let path = request.path.split('?').next().unwrap_or_default();
    path.ends_with("/models") || path == "/props" || path.starts_with("/api/")
}

/// Whether a request asks llama.cpp's tokenizer for a count.
fn is_tokenize(request: &Recorded) -> bool {
    request.path.split('?').next().unwrap_or_default() == "/tokenize"
}

/// The running server; it stops with the test's runtime.
pub struct Server {
    addr: SocketAddr,
    state: Arc<State>,
}

impl Server {
    /// Request `i` gets `replies[i]`, or the last reply once they run out.
    pub async fn start(replies: Vec<Reply>) -> Self {
        assert!(!replies.is_empty());
        Self::with(move |i| replies[i.min(replies.len() - 1)].clone()).await
    }

    /// Request `i` gets `script(i)`.
    pub async fn with(script: impl Fn(usize) -> Reply + Send + Sync + 'static) -> Self {
        Self::answering(move |i, _| script(i)).await
    }

    /// Request `i` gets `script(i, request)`: the reply may depend on what
    /// the client sent (a path it reported, say).
    pub async fn answering(script: impl Fn(usize, &Recorded) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State {
            script: Box::new(script),
            requests: Mutex::new(Vec::new()),
            disconnects: tokio::sync::watch::channel(0).0,
            discovery: Mutex::new(Vec::new()),
            discovery_requests: Mutex::new(Vec::new()),
            tokenize_requests: Mutex::new(Vec::new()),
        });
        let accept_state = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let state = Arc::clone(&accept_state);
                tokio::spawn(async move {
                    let _ = serve(socket, state).await;
                });
            }
        });
        Self { addr, state }
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Answers strata's window question at `path` (e.g. `/v1/models`,
    /// `/api/show`) with `reply` from now on.
    pub fn answer_discovery(&self, path: &str, reply: Reply) {
        self.state
            .discovery
            .lock()
            .unwrap()
            .push((path.to_owned(), reply));
    }

    /// The window questions received, in order.
    pub fn discovery_requests(&self) -> Vec<Recorded> {
        self.state.discovery_requests.lock().unwrap().clone()
    }

    /// The counts asked (`POST /tokenize`), in order.
    pub fn tokenize_requests(&self) -> Vec<Recorded> {
        self.state.tokenize_requests.lock().unwrap().clone()
    }

    /// Waits (up to 10 s) until a client left a held-open body; false on timeout.
    pub async fn saw_disconnect(&self) -> bool {
        let mut rx = self.state.disconnects.subscribe();
        tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|n| *n > 0))
            .await
            .is_ok()
    }
}

async fn serve(mut socket: TcpStream, state: Arc<State>) -> std::io::Result<()> {
    let Some(request) = read_request(&mut socket).await? else {
        return Ok(());
    };
    let asked = if is_tokenize(&request) {
        Some(&state.tokenize_requests)
    } else if is_discovery(&request) {
        Some(&state.discovery_requests)
    } else {
        None
    };
    let discovery = asked.map(|asked| {
        asked.lock().unwrap().push(request.clone());
        let path = request.path.split('?').next().unwrap_or_default().to_owned();
        state
            .discovery
            .lock()
            .unwrap()
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| Reply::json(404, r#"{"error":"not found"}"#))
    });
    if let Some(reply) = discovery {
        return write_reply(&mut socket, &state, &reply).await;
    }
    let index = {
        let mut requests = state.requests.lock().unwrap();
        requests.push(request.clone());
        requests.len() - 1
    };
    let reply = (state.script)(index, &request);
    write_reply(&mut socket, &state, &reply).await
}

async fn write_reply(socket: &mut TcpStream, state: &State, reply: &Reply) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {} X\r\nconnection: close\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match &reply.body {
        Body::Full(body) => {
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body).await?;
            socket.flush().await?;
        }
        Body::Chunks(pieces) | Body::Cut(pieces) | Body::Hold(pieces) => {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            socket.write_all(head.as_bytes()).await?;
            socket.flush().await?;
            for piece in pieces.iter().filter(|p| !p.is_empty()) {
                socket
                    .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                    .await?;
                socket.write_all(piece).await?;
                socket.write_all(b"\r\n").await?;
                socket.flush().await?;
            }
            match reply.body {
                Body::Chunks(_) => {
                    socket.write_all(b"0\r\n\r\n").await?;
                    socket.flush().await?;
                }
                Body::Hold(_) => {
                    let mut buf = [0u8; 256];
                    while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
                    state.disconnects.send_modify(|n| *n += 1);
                }
                _ => {}
            }
        }
    }
    socket.shutdown().await
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<Option<Recorded>> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            return Ok(None);
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = data[head_end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Ok(Some(Recorded {
        method,
        path,
        headers,
        body,
    }))
}
