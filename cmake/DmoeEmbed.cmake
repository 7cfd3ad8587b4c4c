# dmoe_embed_web(<target> FUNCTION <namespace::name> FILES <file>...)
#
# Compiles web files (HTML, CSS, JavaScript, SVG, PNG) into <target> as a
# table of dancemoe::http::StaticAsset (common/http/static_assets.h) returned
# by `std::span<const dancemoe::http::StaticAsset> <namespace::name>()`, which
# the target declares in one of its headers. Each file is served at
# "/<file name>". The files stay plain files in the repository (no build
# step of their own); the table is regenerated whenever one of them changes.
function(dmoe_embed_web target)
  cmake_parse_arguments(ARG "" "FUNCTION" "FILES" ${ARGN})
  string(REPLACE "::" "_" stem "${ARG_FUNCTION}")
  set(out "${CMAKE_CURRENT_BINARY_DIR}/generated/${stem}.cpp")
  string(REPLACE ";" "|" files "${ARG_FILES}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DFUNCTION=${ARG_FUNCTION} "-DFILES=${files}"
            -P ${PROJECT_SOURCE_DIR}/cmake/DmoeEmbedScript.cmake
    DEPENDS ${ARG_FILES} ${PROJECT_SOURCE_DIR}/cmake/DmoeEmbedScript.cmake
    COMMENT "Embedding web files for ${ARG_FUNCTION}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
