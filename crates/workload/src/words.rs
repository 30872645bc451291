//! Words for generated text: common English business vocabulary, so bodies read like mail
//! and compress like mail, rather than one sentence repeated.

pub(crate) const WORDS: &[&str] = &[
    "the", "of", "and", "to", "a", "in", "for", "is", "on", "that", "by", "this", "with", "you",
    "it", "not", "or", "be", "are", "from", "at", "as", "your", "all", "have", "new", "more",
    "an", "was", "we", "will", "can", "our", "about", "if", "my", "has", "but", "they", "one",
    "up", "what", "which", "their", "time", "out", "so", "please", "there", "when", "also",
    "who", "now", "help", "get", "first", "been", "would", "how", "were", "me", "some", "these",
    "its", "like", "than", "find", "back", "only", "any", "other", "could", "over", "after",
    "meeting", "project", "report", "budget", "review", "schedule", "customer", "team",
    "quarter", "sales", "forecast", "draft", "attached", "agenda", "minutes", "proposal",
    "contract", "invoice", "order", "server", "network", "release", "update", "status",
    "deadline", "week", "monday", "tuesday", "wednesday", "thursday", "friday", "morning",
    "afternoon", "office", "call", "conference", "room", "plan", "numbers", "figures",
    "changes", "comments", "feedback", "question", "answer", "issue", "problem", "solution",
    "support", "training", "policy", "process", "quality", "product", "service", "market",
    "price", "cost", "revenue", "growth", "target", "result", "results", "analysis", "data",
    "document", "version", "copy", "note", "notes", "list", "item", "items", "summary",
    "detail", "details", "request", "approval", "sign", "send", "sent", "received", "reply",
    "forward", "check", "confirm", "discuss", "prepare", "finish", "start", "complete",
    "should", "need", "needs", "must", "might", "still", "just", "again", "soon", "today",
    "tomorrow", "yesterday", "next", "last", "before", "during", "between", "around",
    "regarding", "following", "previous", "current", "final", "initial", "internal",
    "external", "regional", "central", "manager", "director", "staff", "group", "department",
    "division", "partner", "vendor", "supplier", "client", "account", "accounts", "system",
    "systems", "application", "database", "backup", "storage", "capacity", "performance",
    "users", "mailbox", "folder", "calendar", "appointment", "travel", "expenses", "hotel",
    "flight", "visit", "site", "plant", "warehouse", "shipment", "delivery", "inventory",
    "stock", "parts", "design", "engineering", "testing", "launch", "campaign", "brochure",
    "presentation", "slides", "spreadsheet", "table", "chart", "total", "estimate", "actual",
    "variance", "good", "great", "small", "large", "important", "urgent", "possible",
    "available", "ready", "late", "early", "clear", "open", "closed", "pending", "agreed",
    "thanks", "regards", "everyone", "colleagues", "hope", "think", "know", "let", "see",
    "look", "make", "take", "keep", "give", "use", "work", "working", "move", "moved",
];

/// Short words by length, for filling a body to its exact size.
pub(crate) const FILL: [&str; 8] = ["a", "to", "the", "team", "plans", "report", "project", "schedule"];
