# Install rules and the CMake package config, so `find_package(reprokit)` works for the generated
# GoogleTest repro cases: one imported target, reprokit::reprokit, carrying every layer.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# pip install . (scikit-build-core): only the command line, inside the Python package.
if(SKBUILD)
  install(TARGETS reprokit RUNTIME DESTINATION reprokit/bin)
  return()
endif()

add_library(reprokit_all INTERFACE)
set_target_properties(reprokit_all PROPERTIES EXPORT_NAME reprokit)
target_link_libraries(reprokit_all INTERFACE rk_capture rk_harness rk_codegen rk_aot rk_onnx rk_runtime rk_ir rk_process rk_support)
# A sanitized build's libraries need the sanitizer runtimes wherever they are linked.
if(REPROKIT_SANITIZE)
  target_link_options(reprokit_all INTERFACE -fsanitize=address,undefined)
endif()

install(TARGETS rk_support rk_ir rk_runtime rk_onnx rk_aot rk_codegen rk_process rk_harness rk_capture rk_minify_engine rk_minifier reprokit_all
        EXPORT reprokitTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS reprokit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/reprokit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT reprokitTargets NAMESPACE reprokit:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/reprokit)

file(WRITE ${CMAKE_BINARY_DIR}/reprokitConfig.cmake.in [=[
@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
find_dependency(fmt)
find_dependency(nlohmann_json)
find_dependency(Threads)
find_dependency(Boost COMPONENTS filesystem)
find_dependency(Protobuf)
find_dependency(ONNX)
include("${CMAKE_CURRENT_LIST_DIR}/reprokitTargets.cmake")
]=])
configure_package_config_file(${CMAKE_BINARY_DIR}/reprokitConfig.cmake.in ${CMAKE_BINARY_DIR}/reprokitConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/reprokit)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/reprokitConfigVersion.cmake VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/reprokitConfig.cmake ${CMAKE_BINARY_DIR}/reprokitConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/reprokit)
