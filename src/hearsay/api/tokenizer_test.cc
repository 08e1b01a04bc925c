#include "hearsay/api/tokenizer.h"

#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "hearsay/env/rng.h"

namespace hearsay::api {
namespace {

std::vector<std::string> PieceStrings(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view p : Tokenizer().Pieces(text)) out.emplace_back(p);
  return out;
}

TEST(TokenizerTest, CutsWordsWithTheirLeadingSpace) {
  EXPECT_EQ(PieceStrings("Hello world, 42 times!"),
            (std::vector<std::string>{"Hello", " world", ",", " 42", " times", "!"}));
}

TEST(TokenizerTest, WhitespaceRunsLeaveTheLastSpaceToTheNextWord) {
  EXPECT_EQ(PieceStrings("a   b"), (std::vector<std::string>{"a", "  ", " b"}));
  EXPECT_EQ(PieceStrings("a\n\nb"), (std::vector<std::string>{"a", "\n\n", "b"}));
  EXPECT_EQ(PieceStrings("a \n b"), (std::vector<std::string>{"a", " \n", " b"}));
  EXPECT_EQ(PieceStrings("a  "), (std::vector<std::string>{"a", "  "}));
  EXPECT_EQ(PieceStrings(" ."), (std::vector<std::string>{" ", "."}));
}

TEST(TokenizerTest, KeepsMultibyteCharactersWhole) {
  // "é" (2 bytes), "日本" (3 bytes each), an emoji (4 bytes): letters of a word run.
  EXPECT_EQ(PieceStrings("caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80!"),
            (std::vector<std::string>{"caf\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC",
                                      " \xF0\x9F\x98\x80", "!"}));
}

TEST(TokenizerTest, InvalidUtf8BytesAreSinglePieces) {
  // A lone continuation byte, a truncated sequence, an overlong form.
  EXPECT_EQ(PieceStrings("a\x80"
                         "b\xC3"
                         "c\xC0\xAF"),
            (std::vector<std::string>{"a", "\x80", "b", "\xC3", "c", "\xC0", "\xAF"}));
}

TEST(TokenizerTest, PiecesConcatenateToTheText) {
  Rng rng(7);
  const std::string alphabet = "ab Z9 \t\n.,!\xC3\xA9\x80";
  for (int round = 0; round < 200; ++round) {
    std::string text;
    const size_t len = rng.Below(60);
    for (size_t i = 0; i < len; ++i) text.push_back(alphabet[rng.Below(alphabet.size())]);
    std::string joined;
    for (std::string_view p : Tokenizer().Pieces(text)) {
      EXPECT_FALSE(p.empty());
      joined.append(p);
    }
    EXPECT_EQ(joined, text);
    EXPECT_EQ(Tokenizer().Encode(text).size(), Tokenizer().Pieces(text).size());
  }
}

TEST(TokenizerTest, IdsAreStableNonZeroAndDistinguishPieces) {
  const Tokenizer tok;
  EXPECT_EQ(tok.Encode("hello world"), tok.Encode("hello world"));
  EXPECT_EQ(tok.Encode(""), std::vector<uint32_t>{});
  const auto ids = tok.Encode("the cat sat on the mat");
  ASSERT_EQ(ids.size(), 6u);
  EXPECT_NE(ids[0], ids[4]);  // "the" vs " the": the leading space is part of the piece
  EXPECT_EQ(ids[0], Tokenizer::PieceId("the"));
  EXPECT_EQ(ids[4], Tokenizer::PieceId(" the"));
  std::set<uint32_t> distinct(ids.begin(), ids.end());
  EXPECT_EQ(distinct.size(), 6u);
  for (uint32_t id : ids) EXPECT_NE(id, 0u);
}

// Equal text prefixes give equal token prefixes, up to the last token of the shorter text.
TEST(TokenizerTest, PrefixProperty) {
  const Tokenizer tok;
  Rng rng(11);
  const std::vector<std::string> units = {"a",
                                          "b",
                                          "Z",
                                          "7",
                                          " ",
                                          "  ",
                                          "\n",
                                          "\t",
                                          ".",
                                          ",",
                                          "\xC3\xA9",
                                          "\xE6\x97\xA5",
                                          "\xF0\x9F\x98\x80",
                                          "\xFF"};
  for (int round = 0; round < 500; ++round) {
    std::string text;
    const size_t len = 1 + rng.Below(40);
    for (size_t i = 0; i < len; ++i) text.append(units[rng.Below(units.size())]);
    const auto full = tok.Encode(text);
    // Every cut on a character boundary.
    for (size_t cut = 0; cut <= text.size(); ++cut) {
      if (cut < text.size() && (static_cast<uint8_t>(text[cut]) & 0xC0) == 0x80) continue;
      const auto prefix = tok.Encode(std::string_view(text).substr(0, cut));
      if (prefix.empty()) continue;
      ASSERT_LE(prefix.size() - 1, full.size());
      for (size_t i = 0; i + 1 < prefix.size(); ++i) {
        ASSERT_EQ(prefix[i], full[i]) << "text=" << text << " cut=" << cut << " token " << i;
      }
    }
  }
}

// The cutting rules of tokenizer.h, written for clarity rather than speed, to check Pieces
// against on random text.
size_t ReferenceWordCharLength(std::string_view t, size_t i) {
  const auto c = static_cast<uint8_t>(t[i]);
  if (std::isalnum(c)) return 1;
  size_t len = 0;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  if (c >= 0xE0 && c <= 0xEF) len = 3;
  if (c >= 0xF0 && c <= 0xF4) len = 4;
  if (len == 0 || i + len > t.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<uint8_t>(t[i + k]) & 0xC0) != 0x80) return 0;
  }
  const auto c1 = static_cast<uint8_t>(t[i + 1]);
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
      (c == 0xF4 && c1 > 0x8F)) {
    return 0;  // overlong, surrogate or above U+10FFFF
  }
  return len;
}

std::vector<std::string> ReferencePieces(std::string_view t) {
  auto word_end = [&](size_t i) {
    while (i < t.size()) {
      const size_t len = ReferenceWordCharLength(t, i);
      if (len == 0) break;
      i += len;
    }
    return i;
  };
  auto is_space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  std::vector<std::string> out;
  size_t i = 0;
  while (i < t.size()) {
    size_t end;
    if (t[i] == ' ' && i + 1 < t.size() && ReferenceWordCharLength(t, i + 1) > 0) {
      end = word_end(i + 1);
    } else if (ReferenceWordCharLength(t, i) > 0) {
      end = word_end(i);
    } else if (is_space(t[i])) {
      end = i + 1;
      while (end < t.size() && is_space(t[end])) ++end;
      if (end - i > 1 && t[end - 1] == ' ' && end < t.size() &&
          ReferenceWordCharLength(t, end) > 0) {
        --end;
      }
    } else {
      end = i + 1;
    }
    out.emplace_back(t.substr(i, end - i));
    i = end;
  }
  return out;
}

TEST(TokenizerTest, PiecesMatchAPlainReadingOfTheRules) {
  Rng rng(23);
  const std::vector<std::string> units = {"a",  "Q",  "9",  "word", " ",  "   ", "\n", "\r\n",
                                          "\t", ".",  "!",  "\"",   "\xC3\xA9",  "\xE6\x97\xA5",
                                          "\xF0\x9F\x98\x80", "\xFF", "\xC3", "\xE0\x80\x80",
                                          "\xED\xA0\x80", std::string(1, '\0')};
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    const size_t len = rng.Below(30);
    for (size_t i = 0; i < len; ++i) text.append(units[rng.Below(units.size())]);
    ASSERT_EQ(PieceStrings(text), ReferencePieces(text)) << "text=" << text;
    std::vector<uint32_t> ids;
    for (const std::string& piece : ReferencePieces(text)) ids.push_back(Tokenizer::PieceId(piece));
    ASSERT_EQ(Tokenizer().Encode(text), ids) << "text=" << text;
  }
}

TEST(TokenizerTest, EncodesHugeInputInOnePass) {
  // 8 MiB of mixed text: a quadratic pass would not finish within the test timeout.
  std::string text;
  while (text.size() < (8u << 20)) text.append("The quick brown fox, 42 times!\n  ");
  const auto ids = Tokenizer().Encode(text);
  EXPECT_GT(ids.size(), text.size() / 8);
  // One huge word and one huge whitespace run.
  EXPECT_EQ(Tokenizer().Encode(std::string(4u << 20, 'x')).size(), 1u);
  EXPECT_EQ(Tokenizer().Encode(std::string(4u << 20, '\n')).size(), 1u);
}

TEST(TokenizerTest, RenderTokenIsADeterministicWordWithALeadingSpace) {
  const Tokenizer tok;
  std::set<std::string> words;
  for (uint32_t id = 0; id < 1000; ++id) {
    const std::string w = tok.RenderToken(id);
    ASSERT_GE(w.size(), 2u);
    EXPECT_EQ(w[0], ' ');
    EXPECT_EQ(w, tok.RenderToken(id));
    for (char c : w.substr(1)) EXPECT_TRUE(c >= 'a' && c <= 'z') << w;
    words.insert(w);
  }
  // Consecutive ids spread over the word list.
  EXPECT_GT(words.size(), 40u);
  std::string appended = "x";
  tok.AppendToken(5, &appended);
  std::string expected = "x";
  expected += tok.RenderToken(5);
  EXPECT_EQ(appended, expected);
}

}  // namespace
}  // namespace hearsay::api
