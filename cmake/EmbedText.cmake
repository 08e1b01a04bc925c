# cmake -DIN=<file> -DOUT=<file.cc> -DNAME=<C++ function> -DNAMESPACE=<ns> -P EmbedText.cmake
# Writes OUT: a C++ source defining `std::string_view NAMESPACE::NAME()` that returns IN's bytes,
# so a file (the web console's HTML) ships inside the binary and nothing is read at run time.
file(READ "${IN}" content)
string(FIND "${content}" ")embedded\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )embedded\"")
endif()
file(WRITE "${OUT}.tmp"
  "// Generated from ${IN} by cmake/EmbedText.cmake; do not edit.\n"
  "#include <string_view>\n\nnamespace ${NAMESPACE} {\n\n"
  "std::string_view ${NAME}() {\n  static constexpr char kText[] = R\"embedded(${content})embedded\";\n"
  "  return {kText, sizeof(kText) - 1};\n}\n\n}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
