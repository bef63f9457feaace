/* words — a built-in list of common English words, so random prompts are made of real words on
 * every machine (no dependency on /usr/share/dict) and the same seed gives the same prompts. */
#include "dataset/words.h"

static const char *const words[] = {
    "time", "year", "people", "way", "day", "man", "thing", "woman", "life", "child", "world", "school",
    "state", "family", "student", "group", "country", "problem", "hand", "part", "place", "case", "week",
    "company", "system", "program", "question", "work", "government", "number", "night", "point", "home",
    "water", "room", "mother", "area", "money", "story", "fact", "month", "lot", "right", "study", "book",
    "eye", "job", "word", "business", "issue", "side", "kind", "head", "house", "service", "friend",
    "father", "power", "hour", "game", "line", "end", "member", "law", "car", "city", "community", "name",
    "president", "team", "minute", "idea", "kid", "body", "information", "back", "parent", "face",
    "others", "level", "office", "door", "health", "person", "art", "war", "history", "party", "result",
    "change", "morning", "reason", "research", "girl", "guy", "moment", "air", "teacher", "force",
    "education", "foot", "boy", "age", "policy", "process", "music", "market", "sense", "nation", "plan",
    "college", "interest", "death", "experience", "effect", "use", "class", "control", "care", "field",
    "development", "role", "effort", "rate", "heart", "drug", "show", "leader", "light", "voice", "wife",
    "police", "mind", "price", "report", "decision", "son", "view", "relationship", "town", "road", "arm",
    "difference", "value", "building", "action", "model", "season", "society", "tax", "director",
    "position", "player", "record", "paper", "space", "ground", "form", "event", "official", "matter",
    "center", "couple", "site", "project", "activity", "star", "table", "need", "court", "oil",
    "situation", "cost", "industry", "figure", "street", "image", "phone", "data", "picture", "practice",
    "piece", "land", "product", "doctor", "wall", "patient", "worker", "news", "test", "movie", "north",
    "love", "support", "technology", "step", "baby", "computer", "type", "attention", "film", "tree",
    "source", "organization", "hair", "window", "evidence", "population", "site", "river", "garden",
    "simple", "small", "large", "young", "important", "public", "bad", "same", "able", "early", "general",
    "strong", "clear", "open", "short", "recent", "free", "true", "whole", "real", "best", "better",
    "little", "high", "great", "long", "new", "good", "old", "different", "local", "social", "national",
    "political", "possible", "major", "economic", "special", "hard", "easy", "ready", "happy", "quick",
    "read", "write", "speak", "think", "know", "find", "give", "tell", "call", "keep", "begin", "seem",
    "help", "talk", "turn", "start", "show", "hear", "play", "run", "move", "like", "live", "believe",
    "bring", "happen", "include", "continue", "learn", "grow", "remember", "consider", "appear", "buy",
    "wait", "serve", "send", "expect", "build", "stay", "fall", "reach", "remain", "suggest", "raise",
    "pass", "sell", "require", "decide", "explain", "develop", "carry", "break", "receive", "agree",
    "always", "often", "never", "usually", "today", "later", "together", "already", "again", "soon",
    "river", "mountain", "ocean", "forest", "island", "valley", "desert", "bridge", "castle", "harbor",
    "engine", "signal", "circuit", "memory", "network", "server", "packet", "kernel", "thread", "buffer",
    "window", "garden", "kitchen", "letter", "journey", "morning", "evening", "winter", "summer", "spring",
};

const char *const *words_list(size_t *n) {
    *n = sizeof words / sizeof words[0];
    return words;
}
