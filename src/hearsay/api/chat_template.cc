// ChatML-like rendering of chat messages, and validation of the JSON `messages` array.
#include "hearsay/api/chat_template.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hearsay/api/json_type.h"

namespace hearsay::api {
namespace {

std::string Param(size_t i, std::string_view field) {
  std::string out = "messages[" + std::to_string(i) + "]";
  if (!field.empty()) {
    out.push_back('.');
    out.append(field);
  }
  return out;
}

// Joins the text parts of an array content; other part types are refused.
std::variant<std::string, ApiError> JoinParts(const nlohmann::json& parts, size_t index) {
  std::string text;
  for (size_t p = 0; p < parts.size(); ++p) {
    const nlohmann::json& part = parts[p];
    const std::string where = Param(index, "content[" + std::to_string(p) + "]");
    if (!part.is_object()) {
      return InvalidRequest(where,
                            "Invalid type for '" + where + "': expected an object, but got " +
                                std::string(JsonTypeName(part)) + " instead.",
                            "invalid_type");
    }
    const auto type = part.find("type");
    if (type == part.end() || !type->is_string()) {
      return InvalidRequest(where + ".type",
                            "Missing or invalid '" + where + ".type': expected a string.",
                            "invalid_type");
    }
    if (type->get_ref<const std::string&>() != "text") {
      return InvalidRequest(where + ".type",
                            "Content parts of type '" +
                                Truncated(type->get_ref<const std::string&>(), 32) +
                                "' are not supported by this server; only 'text' parts are.",
                            "unsupported_content_type");
    }
    const auto t = part.find("text");
    if (t == part.end() || !t->is_string()) {
      return InvalidRequest(where + ".text",
                            "Missing or invalid '" + where + ".text': expected a string.",
                            "invalid_type");
    }
    text.append(t->get_ref<const std::string&>());
  }
  return text;
}

}  // namespace

void AppendMessage(const ChatMessage& message, std::string* out) {
  out->append(kImStart);
  out->append(message.role);
  out->push_back('\n');
  out->append(message.content);
  out->append(kImEnd);
  out->push_back('\n');
}

std::string RenderMessages(std::span<const ChatMessage> messages) {
  size_t size = 0;
  for (const ChatMessage& m : messages) {
    size += kImStart.size() + m.role.size() + m.content.size() + kImEnd.size() + 2;
  }
  std::string out;
  out.reserve(size + kGenerationPrompt.size());
  for (const ChatMessage& m : messages) AppendMessage(m, &out);
  return out;
}

std::string RenderChat(std::span<const ChatMessage> messages) {
  std::string out = RenderMessages(messages);
  out.append(kGenerationPrompt);
  return out;
}

std::variant<std::vector<ChatMessage>, ApiError> ParseMessages(const nlohmann::json& messages) {
  if (!messages.is_array()) {
    return InvalidRequest("messages",
                          "Invalid type for 'messages': expected an array, but got " +
                              std::string(JsonTypeName(messages)) + " instead.",
                          "invalid_type");
  }
  if (messages.empty()) {
    return InvalidRequest("messages",
                          "Invalid 'messages': empty array. Expected an array with minimum "
                          "length 1, but got an empty array instead.",
                          "empty_array");
  }
  std::vector<ChatMessage> out;
  out.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const nlohmann::json& m = messages[i];
    if (!m.is_object()) {
      return InvalidRequest(Param(i, ""),
                            "Invalid type for '" + Param(i, "") +
                                "': expected an object, but got " + std::string(JsonTypeName(m)) +
                                " instead.",
                            "invalid_type");
    }
    const auto role = m.find("role");
    if (role == m.end()) {
      return InvalidRequest(Param(i, "role"),
                            "Missing required parameter: '" + Param(i, "role") + "'.",
                            "missing_required_parameter");
    }
    if (!role->is_string()) {
      return InvalidRequest(Param(i, "role"),
                            "Invalid type for '" + Param(i, "role") +
                                "': expected a string, but got " +
                                std::string(JsonTypeName(*role)) + " instead.",
                            "invalid_type");
    }
    const std::string& role_name = role->get_ref<const std::string&>();
    if (std::find(std::begin(kChatRoles), std::end(kChatRoles), role_name) ==
        std::end(kChatRoles)) {
      return InvalidRequest(Param(i, "role"),
                            "Invalid value: '" + Truncated(role_name, 32) +
                                "'. Supported values "
                                "are: 'system', 'user', 'assistant', 'tool' and 'developer'.",
                            "invalid_value");
    }
    ChatMessage message{role_name, {}};
    const auto content = m.find("content");
    if (content == m.end()) {
      return InvalidRequest(Param(i, "content"),
                            "Missing required parameter: '" + Param(i, "content") + "'.",
                            "missing_required_parameter");
    }
    if (content->is_string()) {
      message.content = content->get<std::string>();
    } else if (content->is_array()) {
      auto joined = JoinParts(*content, i);
      if (auto* error = std::get_if<ApiError>(&joined)) return std::move(*error);
      message.content = std::move(std::get<std::string>(joined));
    } else if (content->is_null() && role_name == "assistant") {
      // An assistant turn that only called tools has null content.
    } else {
      return InvalidRequest(Param(i, "content"),
                            "Invalid type for '" + Param(i, "content") +
                                "': expected a string or an array of text parts, but got " +
                                std::string(JsonTypeName(*content)) + " instead.",
                            "invalid_type");
    }
    out.push_back(std::move(message));
  }
  return out;
}

}  // namespace hearsay::api
