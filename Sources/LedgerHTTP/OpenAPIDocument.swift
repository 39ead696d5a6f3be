/// The API's OpenAPI 3.1 document (`openapi.yaml` beside this file), served at `/openapi.yaml`.
enum OpenAPIDocument {
    static let yaml = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)
}
