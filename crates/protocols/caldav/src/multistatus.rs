//! The `207 Multi-Status` body (RFC 4918 §13, §14.16): hrefs, statuses and
//! the few properties a calendar client reads.
//!
//! Namespaces are resolved (quick-xml's `NsReader`), so `D:`, `d:` or a
//! default namespace all work. Unknown elements are skipped. The input is
//! already capped by the HTTP layer's body limit; within it the parser bounds
//! nesting depth and the number of responses, refuses a DOCTYPE (DAV needs
//! none, and it is where entity-expansion attacks live) and any entity other
//! than XML's five and character references.

use quick_xml::NsReader;
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;

/// The DAV: namespace.
pub const DAV: &str = "DAV:";
/// The CalDAV namespace (RFC 4791).
pub const CALDAV: &str = "urn:ietf:params:xml:ns:caldav";
/// Apple CalendarServer's namespace, for `getctag`.
pub const CALENDARSERVER: &str = "http://calendarserver.org/ns/";

/// Bounds on a multistatus body beyond its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XmlLimits {
    /// Deepest element nesting.
    pub max_depth: usize,
    /// Most `<response>` elements.
    pub max_responses: usize,
}

impl Default for XmlLimits {
    fn default() -> Self {
        Self {
            max_depth: 64,
            max_responses: 100_000,
        }
    }
}

/// Why a body is not a usable multistatus.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XmlError {
    /// Not well-formed XML (or not UTF-8).
    #[error("malformed XML at byte {position}: {reason}")]
    Syntax {
        /// Where the reader stopped.
        position: u64,
        /// quick-xml's reason.
        reason: String,
    },
    /// The root element is not `DAV:multistatus`.
    #[error("expected a DAV:multistatus document, found {found}")]
    NotMultistatus {
        /// The root found (`{namespace}local`), or "nothing".
        found: String,
    },
    /// Elements nested deeper than [`XmlLimits::max_depth`].
    #[error("XML nested deeper than {limit} elements")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// More responses than [`XmlLimits::max_responses`].
    #[error("more than {limit} responses in one multistatus")]
    TooManyResponses {
        /// The limit.
        limit: usize,
    },
    /// A `<!DOCTYPE>`, which DAV never needs.
    #[error("a DOCTYPE in a DAV response")]
    DocType,
    /// An entity other than `&lt; &gt; &amp; &apos; &quot;` or a character reference.
    #[error("unknown XML entity &{0};")]
    UnknownEntity(String),
    /// A `<status>` that is not `HTTP/1.1 NNN reason`.
    #[error("bad status line {0:?}")]
    BadStatus(String),
    /// A `<response>` without an `<href>`.
    #[error("a response without href")]
    MissingHref,
}

/// A parsed multistatus: one entry per `<response>`, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Multistatus {
    /// The responses.
    pub responses: Vec<DavResponse>,
}

/// One `<response>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DavResponse {
    /// The resource, as the server wrote it (a path or a URL, percent-encoded).
    pub href: String,
    /// The response-level status, when the server gives one instead of
    /// propstats (for example 404 for a resource that vanished).
    pub status: Option<u16>,
    /// The properties, grouped by their status.
    pub propstats: Vec<PropStat>,
}

impl DavResponse {
    /// The properties the server returned with a 2xx status.
    pub fn found(&self) -> Option<&Props> {
        self.propstats
            .iter()
            .find(|p| (200..300).contains(&p.status))
            .map(|p| &p.props)
    }

    /// The ETag, if found.
    pub fn etag(&self) -> Option<&str> {
        self.found().and_then(|p| p.etag.as_deref())
    }

    /// The calendar data, if found.
    pub fn calendar_data(&self) -> Option<&str> {
        self.found().and_then(|p| p.calendar_data.as_deref())
    }
}

/// A `<propstat>`: properties and the status they share.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PropStat {
    /// The status code (200 found, 404 not found ...).
    pub status: u16,
    /// The properties.
    pub props: Props,
}

/// The properties peakhour reads; others are skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Props {
    /// `DAV:getetag`.
    pub etag: Option<String>,
    /// `CALDAV:calendar-data`: the iCalendar text (line ends normalised to LF
    /// by XML, RFC 5545 readers accept that).
    pub calendar_data: Option<String>,
    /// `DAV:displayname`.
    pub display_name: Option<String>,
    /// `CS:getctag`.
    pub ctag: Option<String>,
    /// `DAV:sync-token`.
    pub sync_token: Option<String>,
    /// `DAV:getcontenttype`.
    pub content_type: Option<String>,
    /// `DAV:current-user-principal`'s href.
    pub current_user_principal: Option<String>,
    /// `CALDAV:calendar-home-set`'s href.
    pub calendar_home_set: Option<String>,
    /// `CALDAV:schedule-inbox-URL`'s href (RFC 6638 §2.2.1).
    pub schedule_inbox: Option<String>,
    /// `CALDAV:schedule-default-calendar-URL`'s href (RFC 6638 §9.2).
    pub schedule_default_calendar: Option<String>,
    /// `DAV:resourcetype`'s children: `collection`, `calendar`, `principal` ...
    /// (local names).
    pub resource_types: Vec<String>,
}

impl Props {
    /// True if `resourcetype` holds `calendar`.
    pub fn is_calendar(&self) -> bool {
        self.resource_types.iter().any(|t| t == "calendar")
    }
}

/// An element's identity: namespace class and local name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Name {
    ns: Ns,
    local: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ns {
    Dav,
    CalDav,
    CalendarServer,
    Other,
}

impl Name {
    fn is(&self, ns: Ns, local: &str) -> bool {
        self.ns == ns && self.local == local
    }
}

fn classify(resolved: &ResolveResult<'_>, local: &str) -> Name {
    let ns = match resolved {
        ResolveResult::Bound(ns) => match ns.as_ref() {
            DAV => Ns::Dav,
            CALDAV => Ns::CalDav,
            CALENDARSERVER => Ns::CalendarServer,
            _ => Ns::Other,
        },
        _ => Ns::Other,
    };
    Name {
        ns,
        local: local.to_owned(),
    }
}

/// Parses a multistatus body.
pub fn parse_multistatus(body: &[u8], limits: &XmlLimits) -> Result<Multistatus, XmlError> {
    let text = std::str::from_utf8(body).map_err(|e| XmlError::Syntax {
        position: e.valid_up_to() as u64,
        reason: "not UTF-8".into(),
    })?;
    let mut parser = Parser {
        limits: *limits,
        stack: Vec::new(),
        text: String::new(),
        out: Multistatus::default(),
        response: None,
        propstat: None,
        root_seen: false,
    };
    let mut reader = NsReader::from_str(text);
    loop {
        let position = reader.buffer_position();
        let syntax = |e: quick_xml::Error| XmlError::Syntax {
            position,
            reason: e.to_string(),
        };
        let (resolved, event) = reader.read_resolved_event().map_err(syntax)?;
        match event {
            Event::Start(start) => {
                let name = classify(&resolved, start.local_name().as_ref());
                parser.open(name)?;
            }
            Event::Empty(start) => {
                let name = classify(&resolved, start.local_name().as_ref());
                parser.open(name)?;
                parser.close()?;
            }
            Event::End(_) => parser.close()?,
            Event::Text(text) => parser.text(&text.xml10_content()),
            Event::CData(cdata) => parser.text(&cdata.xml10_content()),
            Event::GeneralRef(reference) => {
                if let Some(c) = reference.resolve_char_ref().map_err(syntax)? {
                    parser.text(c.encode_utf8(&mut [0; 4]));
                } else {
                    let name = reference.into_inner();
                    let resolved = quick_xml::escape::resolve_predefined_entity(&name)
                        .ok_or_else(|| XmlError::UnknownEntity(name.chars().take(32).collect()))?;
                    parser.text(resolved);
                }
            }
            Event::DocType(_) => return Err(XmlError::DocType),
            Event::Eof => {
                if !parser.stack.is_empty() {
                    return Err(XmlError::Syntax {
                        position,
                        reason: format!(
                            "the document ends with {} elements open",
                            parser.stack.len()
                        ),
                    });
                }
                break;
            }
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
        }
    }
    if !parser.root_seen {
        return Err(XmlError::NotMultistatus {
            found: "nothing".into(),
        });
    }
    Ok(parser.out)
}

struct Parser {
    limits: XmlLimits,
    stack: Vec<Name>,
    text: String,
    out: Multistatus,
    response: Option<DavResponse>,
    propstat: Option<PropStat>,
    root_seen: bool,
}

impl Parser {
    fn open(&mut self, name: Name) -> Result<(), XmlError> {
        if self.stack.is_empty() {
            if self.root_seen || !name.is(Ns::Dav, "multistatus") {
                return Err(XmlError::NotMultistatus {
                    found: format!("{:?}:{}", name.ns, name.local),
                });
            }
            self.root_seen = true;
        }
        if self.stack.len() >= self.limits.max_depth {
            return Err(XmlError::TooDeep {
                limit: self.limits.max_depth,
            });
        }
        if name.is(Ns::Dav, "response") && self.parent_is(Ns::Dav, "multistatus") {
            if self.out.responses.len() >= self.limits.max_responses {
                return Err(XmlError::TooManyResponses {
                    limit: self.limits.max_responses,
                });
            }
            self.response = Some(DavResponse::default());
        } else if name.is(Ns::Dav, "propstat") && self.response.is_some() {
            self.propstat = Some(PropStat::default());
        } else if self.parent_is(Ns::Dav, "resourcetype")
            && let Some(propstat) = &mut self.propstat
        {
            propstat.props.resource_types.push(name.local.clone());
        }
        self.text.clear();
        self.stack.push(name);
        Ok(())
    }

    fn parent_is(&self, ns: Ns, local: &str) -> bool {
        self.stack.last().is_some_and(|n| n.is(ns, local))
    }

    fn text(&mut self, text: &str) {
        self.text.push_str(text);
    }

    fn close(&mut self) -> Result<(), XmlError> {
        let Some(name) = self.stack.pop() else {
            return Ok(());
        };
        let text = std::mem::take(&mut self.text);
        let parent = self.stack.last().cloned();
        let parent_is = |ns, local| parent.as_ref().is_some_and(|p: &Name| p.is(ns, local));
        match (name.ns, name.local.as_str()) {
            (Ns::Dav, "response") if parent_is(Ns::Dav, "multistatus") => {
                let response = self.response.take().unwrap_or_default();
                if response.href.is_empty() {
                    return Err(XmlError::MissingHref);
                }
                self.out.responses.push(response);
            }
            (Ns::Dav, "propstat") => {
                if let (Some(propstat), Some(response)) = (self.propstat.take(), &mut self.response)
                {
                    response.propstats.push(propstat);
                }
            }
            (Ns::Dav, "href") if parent_is(Ns::Dav, "response") => {
                if let Some(response) = &mut self.response {
                    response.href = text.trim().to_owned();
                }
            }
            (Ns::Dav, "status") if parent_is(Ns::Dav, "response") => {
                let code = status_code(&text)?;
                if let Some(response) = &mut self.response {
                    response.status = Some(code);
                }
            }
            (Ns::Dav, "status") if parent_is(Ns::Dav, "propstat") => {
                let code = status_code(&text)?;
                if let Some(propstat) = &mut self.propstat {
                    propstat.status = code;
                }
            }
            (Ns::Dav, "href") => {
                if let Some(props) = self.propstat.as_mut().map(|p| &mut p.props) {
                    let href = Some(text.trim().to_owned());
                    if parent_is(Ns::Dav, "current-user-principal") {
                        props.current_user_principal = href;
                    } else if parent_is(Ns::CalDav, "calendar-home-set") {
                        props.calendar_home_set = href;
                    } else if parent_is(Ns::CalDav, "schedule-inbox-URL") {
                        props.schedule_inbox = href;
                    } else if parent_is(Ns::CalDav, "schedule-default-calendar-URL") {
                        props.schedule_default_calendar = href;
                    }
                }
            }
            _ if parent_is(Ns::Dav, "prop") => {
                if let Some(props) = self.propstat.as_mut().map(|p| &mut p.props) {
                    set_prop(props, &name, text);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

fn set_prop(props: &mut Props, name: &Name, text: String) {
    let slot = match (name.ns, name.local.as_str()) {
        (Ns::Dav, "getetag") => &mut props.etag,
        (Ns::CalDav, "calendar-data") => {
            props.calendar_data = Some(text);
            return;
        }
        (Ns::Dav, "displayname") => &mut props.display_name,
        (Ns::CalendarServer, "getctag") => &mut props.ctag,
        (Ns::Dav, "sync-token") => &mut props.sync_token,
        (Ns::Dav, "getcontenttype") => &mut props.content_type,
        _ => return,
    };
    *slot = Some(text.trim().to_owned());
}

/// `HTTP/1.1 200 OK` → 200.
fn status_code(text: &str) -> Result<u16, XmlError> {
    let bad = || XmlError::BadStatus(text.chars().take(64).collect());
    let mut parts = text.split_whitespace();
    let version = parts.next().ok_or_else(bad)?;
    let code = parts.next().ok_or_else(bad)?;
    if !version.starts_with("HTTP/") || code.len() != 3 {
        return Err(bad());
    }
    code.parse::<u16>()
        .ok()
        .filter(|c| (100..600).contains(c))
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4791 §7.8.1's calendar-query response, shortened.
    const RFC4791: &str = r#"<?xml version="1.0" encoding="utf-8" ?>
<D:multistatus xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:response>
    <D:href>http://cal.example.com/bernard/work/abcd2.ics</D:href>
    <D:propstat>
      <D:prop>
        <D:getetag>"fffff-abcd2"</D:getetag>
        <C:calendar-data>BEGIN:VCALENDAR
VERSION:2.0
END:VCALENDAR
</C:calendar-data>
      </D:prop>
      <D:status>HTTP/1.1 200 OK</D:status>
    </D:propstat>
  </D:response>
  <D:response>
    <D:href>/bernard/work/gone.ics</D:href>
    <D:status>HTTP/1.1 404 Not Found</D:status>
  </D:response>
</D:multistatus>"#;

    #[test]
    fn reads_rfc_4791_example() {
        let ms = parse_multistatus(RFC4791.as_bytes(), &XmlLimits::default()).unwrap();
        assert_eq!(ms.responses.len(), 2);
        let first = &ms.responses[0];
        assert_eq!(first.href, "http://cal.example.com/bernard/work/abcd2.ics");
        assert_eq!(first.etag(), Some("\"fffff-abcd2\""));
        assert_eq!(
            first.calendar_data(),
            Some("BEGIN:VCALENDAR\nVERSION:2.0\nEND:VCALENDAR\n")
        );
        assert_eq!(ms.responses[1].status, Some(404));
        assert_eq!(ms.responses[1].found(), None);
    }

    #[test]
    fn default_namespace_entities_cdata_and_resource_types() {
        let xml = r#"<multistatus xmlns="DAV:" xmlns:cs="http://calendarserver.org/ns/"><response><href>/a/</href><propstat><prop><resourcetype><collection/><calendar xmlns="urn:ietf:params:xml:ns:caldav"/></resourcetype><displayname>Tom &amp; Jerry &#233;</displayname><cs:getctag><![CDATA[ctag<1>]]></cs:getctag></prop><status>HTTP/1.1 200 OK</status></propstat></response></multistatus>"#;
        let ms = parse_multistatus(xml.as_bytes(), &XmlLimits::default()).unwrap();
        let props = ms.responses[0].found().unwrap();
        assert_eq!(props.resource_types, ["collection", "calendar"]);
        assert!(props.is_calendar());
        assert_eq!(props.display_name.as_deref(), Some("Tom & Jerry é"));
        assert_eq!(props.ctag.as_deref(), Some("ctag<1>"));
    }

    #[test]
    fn refuses_hostile_documents() {
        let limits = XmlLimits {
            max_depth: 8,
            max_responses: 2,
        };
        let parse = |xml: &str| parse_multistatus(xml.as_bytes(), &limits);
        let deep = format!("<multistatus xmlns=\"DAV:\">{}", "<a>".repeat(20));
        assert_eq!(parse(&deep), Err(XmlError::TooDeep { limit: 8 }));
        let many = format!(
            "<multistatus xmlns=\"DAV:\">{}</multistatus>",
            "<response><href>/x</href></response>".repeat(3)
        );
        assert_eq!(parse(&many), Err(XmlError::TooManyResponses { limit: 2 }));
        let doctype = "<!DOCTYPE x [<!ENTITY a \"aaaa\">]><multistatus xmlns=\"DAV:\"/>";
        assert_eq!(parse(doctype), Err(XmlError::DocType));
        let entity =
            "<multistatus xmlns=\"DAV:\"><response><href>&a;</href></response></multistatus>";
        assert_eq!(parse(entity), Err(XmlError::UnknownEntity("a".into())));
        assert!(matches!(
            parse("<html><body>502</body></html>"),
            Err(XmlError::NotMultistatus { .. })
        ));
        assert!(matches!(parse(""), Err(XmlError::NotMultistatus { .. })));
        assert!(matches!(
            parse("<multistatus xmlns=\"DAV:\"><response>"),
            Err(XmlError::Syntax { .. })
        ));
        let status = "<multistatus xmlns=\"DAV:\"><response><href>/x</href><status>OK</status></response></multistatus>";
        assert_eq!(parse(status), Err(XmlError::BadStatus("OK".into())));
    }
}
