//! The one loop that runs a sans-I/O core over a tokio stream.
//!
//! Every driver (SMTP, IMAP, POP3, and the ones to come) moves bytes the same
//! way: write what the core hands out, read when it needs more, stop at the
//! first event, give up at a deadline. That loop lives here, once; the drivers
//! decide what the events mean.

use std::cell::RefCell;
use std::pin::Pin;
use std::task::Poll;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::Instant;

use crate::sans_io::{Progress, ProtocolCore};
use crate::timing::Stopwatch;
use crate::transport::TransportError;

/// The most one read takes from the stream.
pub const MAX_READ: usize = 64 * 1024;

thread_local! {
    /// Where every pump on this thread reads into, before the bytes go to its
    /// core. One buffer per thread, lent for the length of one `poll_read`:
    /// no connection holds a read buffer between reads (thousands of idle
    /// users stay small), and no read allocates one (a 16 KiB buffer per read
    /// cost a `malloc`, a `free` and often a `malloc_consolidate`).
    static READ_SCRATCH: RefCell<Box<[u8]>> = RefCell::new(vec![0; MAX_READ].into_boxed_slice());
}

/// Why [`Pump::next_event`] returned no event.
#[derive(Debug, thiserror::Error)]
pub enum PumpError<E> {
    /// The core refused what the peer sent, or the command.
    #[error(transparent)]
    Core(E),
    /// Reading or writing failed.
    #[error(transparent)]
    Transport(TransportError),
    /// The deadline passed before the core reported an event.
    #[error("the deadline passed before the peer answered")]
    DeadlineExceeded,
    /// The peer closed the connection and the core still asked for input.
    /// The cores report a closed connection themselves, so this is a
    /// fallback that keeps the loop from reading a closed stream forever.
    #[error("the peer closed the connection")]
    Closed,
}

/// A protocol core and the stream it talks over.
///
/// The fields are public so that a driver can reach both at once: the stream
/// for a STARTTLS upgrade or a shutdown, the core to start a command.
#[derive(Debug)]
pub struct Pump<S, C> {
    /// The connection to the peer.
    pub stream: S,
    /// The protocol state machine.
    pub core: C,
    read_chunk: usize,
    /// A read returned 0: the stream is not read again.
    closed: bool,
}

impl<S, C> Pump<S, C>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: ProtocolCore,
{
    /// Runs `core` over `stream`, asking each read for up to `read_chunk` bytes
    /// (at most [`MAX_READ`]).
    pub fn new(stream: S, core: C, read_chunk: usize) -> Self {
        Self {
            stream,
            core,
            read_chunk: read_chunk.clamp(1, MAX_READ),
            closed: false,
        }
    }

    /// How many bytes each later read asks for at most (up to [`MAX_READ`]).
    /// Reads go through one buffer per thread, so a large chunk costs no
    /// memory per connection.
    pub fn set_read_chunk(&mut self, read_chunk: usize) {
        self.read_chunk = read_chunk.clamp(1, MAX_READ);
    }

    /// Kept for the drivers that call it between commands. A pump holds no
    /// read buffer between reads any more (see [`MAX_READ`]), so there is
    /// nothing to give back.
    pub fn release_read_buffer(&mut self) {}

    /// Writes the core's output and feeds it what the peer sends until it
    /// reports an event, or until `deadline` (none: wait as long as it takes).
    ///
    /// `clock` is the current command's stopwatch; the core hears its reading
    /// with each input ([`ProtocolCore::set_clock`]).
    ///
    /// Not cancel-safe while output is being written: a future dropped then
    /// leaves the peer with part of a command. Drop the connection after that.
    pub async fn next_event(
        &mut self,
        clock: &Stopwatch,
        deadline: Option<Instant>,
    ) -> Result<C::Event, PumpError<C::Error>> {
        match deadline {
            None => self.run(clock).await,
            Some(deadline) => tokio::time::timeout_at(deadline, self.run(clock))
                .await
                .unwrap_or(Err(PumpError::DeadlineExceeded)),
        }
    }

    async fn run(&mut self, clock: &Stopwatch) -> Result<C::Event, PumpError<C::Error>> {
        loop {
            match self.core.next().map_err(PumpError::Core)? {
                Progress::Output(bytes) => {
                    self.stream.write_all(&bytes).await.map_err(io_error)?;
                    self.stream.flush().await.map_err(io_error)?;
                }
                Progress::NeedMoreInput => self.read_once(clock).await?,
                Progress::Event(event) => return Ok(event),
            }
        }
    }

    /// Reads once and hands what arrived to the core, or tells it that the
    /// peer closed the connection.
    ///
    /// Cancel-safe: its only await is one `read_buf`, which either reads or
    /// does not, and the bytes reach the core before it returns. A driver that
    /// waits for unsolicited data (IMAP IDLE) can race it against a timer.
    pub async fn read_once(&mut self, clock: &Stopwatch) -> Result<(), PumpError<C::Error>> {
        if self.closed {
            return Err(PumpError::Closed);
        }
        let Self {
            stream,
            core,
            read_chunk,
            ..
        } = self;
        // The thread's buffer is borrowed only inside one poll, never across
        // an await, and what was read reaches the core in that same poll.
        let read = std::future::poll_fn(|cx| {
            READ_SCRATCH.with_borrow_mut(|scratch| {
                let mut buf = ReadBuf::new(&mut scratch[..*read_chunk]);
                match Pin::new(&mut *stream).poll_read(cx, &mut buf) {
                    Poll::Ready(Ok(())) => {
                        let bytes = buf.filled();
                        if !bytes.is_empty() {
                            core.set_clock(clock.elapsed());
                            core.enqueue_input(bytes);
                        }
                        Poll::Ready(Ok(bytes.len()))
                    }
                    Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
                    Poll::Pending => Poll::Pending,
                }
            })
        })
        .await
        .map_err(io_error)?;
        if read == 0 {
            self.closed = true;
            self.core.input_closed();
        }
        Ok(())
    }
}

fn io_error<E>(error: std::io::Error) -> PumpError<E> {
    PumpError::Transport(TransportError::Io(error))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A toy line protocol: `send` queues a line; every line received is an event.
    #[derive(Debug, Default)]
    struct Lines {
        output: Vec<u8>,
        input: Vec<u8>,
        closed: bool,
        inputs: usize,
        clock: Vec<Duration>,
    }

    impl ProtocolCore for Lines {
        type Event = Vec<u8>;
        type Error = &'static str;

        fn enqueue_input(&mut self, bytes: &[u8]) {
            self.inputs += 1;
            self.input.extend_from_slice(bytes);
        }

        fn input_closed(&mut self) {
            self.closed = true;
        }

        fn next(&mut self) -> Result<Progress<Vec<u8>>, &'static str> {
            if !self.output.is_empty() {
                return Ok(Progress::Output(std::mem::take(&mut self.output)));
            }
            if let Some(end) = self.input.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.input.drain(..=end).collect();
                return Ok(Progress::Event(line));
            }
            if self.closed {
                return Err("closed mid-line");
            }
            Ok(Progress::NeedMoreInput)
        }

        fn set_clock(&mut self, elapsed: Duration) {
            self.clock.push(elapsed);
        }
    }

    #[tokio::test]
    async fn writes_output_then_reads_until_an_event() {
        let (client, mut server) = tokio::io::duplex(64);
        let mut pump = Pump::new(client, Lines::default(), 4);
        pump.core.output = b"ping\n".to_vec();
        let peer = tokio::spawn(async move {
            let mut request = [0u8; 5];
            server.read_exact(&mut request).await.unwrap();
            assert_eq!(&request, b"ping\n");
            server.write_all(b"pong\nrest").await.unwrap();
            server
        });
        let clock = Stopwatch::start();
        let event = pump.next_event(&clock, None).await.unwrap();
        assert_eq!(event, b"pong\n");
        assert!(pump.core.inputs > 0);
        assert_eq!(
            pump.core.clock.len(),
            pump.core.inputs,
            "a clock reading per input"
        );
        drop(peer.await.unwrap());
        // "rest" has no newline and the peer has gone: the core's own error.
        match pump.next_event(&clock, None).await {
            Err(PumpError::Core("closed mid-line")) => {}
            other => panic!("{other:?}"),
        }
        // A core that still wanted input after that would not loop forever.
        assert!(matches!(
            pump.read_once(&clock).await,
            Err(PumpError::Closed)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_at_the_deadline() {
        let (client, _server) = tokio::io::duplex(64);
        let mut pump = Pump::new(client, Lines::default(), 64);
        let deadline = Instant::now() + Duration::from_secs(5);
        let started = Instant::now();
        let result = pump.next_event(&Stopwatch::start(), Some(deadline)).await;
        assert!(matches!(result, Err(PumpError::DeadlineExceeded)));
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test]
    async fn reads_at_most_the_chunk_asked_for() {
        let (client, mut server) = tokio::io::duplex(64);
        let mut pump = Pump::new(client, Lines::default(), 3);
        server.write_all(b"abcdefg\n").await.unwrap();
        let clock = Stopwatch::start();
        pump.read_once(&clock).await.unwrap();
        assert_eq!(pump.core.input, b"abc");
        pump.set_read_chunk(usize::MAX);
        assert_eq!(pump.read_chunk, MAX_READ);
        assert_eq!(pump.next_event(&clock, None).await.unwrap(), b"abcdefg\n");
        assert_eq!(pump.core.inputs, 2);
    }
}
